#!/usr/bin/env python3
"""Eager vs compiled (Inductor) main_grad steps at Llama-3-8B's MLP sizes:
time and peak memory. A compiled backward that cloned main_grad (a failed
reinplace of the mutating op) would show as +0.66 GiB and a copy's time.

    python3 benchmarks/compiled_main_grad.py [--steps 10] [--json FILE]

Each module (tile.nn.TiledSwiGLUMLP, SwiGLUMLP and RMSNorm with
accumulate_into_main_grad=True, bf16, S = 16384, H = 4096, I = 14336) runs
eagerly and under torch.compile(fullgraph=True): three warm-up steps, one
step for the peak memory above the inputs, then --steps steps each timed by
CUDA events from an idle queue (timing.step_times); the middle one of the
sorted times (the upper of the two middle ones for an even count) and the
fastest are reported.
"""

import argparse

import torch

import results
import tile
import timing

SEQUENCE, HIDDEN, INTER = 16384, 4096, 14336


def modules():
    """(name, a function making the module) of every row."""
    options = dict(accumulate_into_main_grad=True, device="cuda",
                   dtype=torch.bfloat16)
    return [("TiledSwiGLUMLP",
             lambda: tile.nn.TiledSwiGLUMLP(HIDDEN, INTER, **options)),
            ("SwiGLUMLP",
             lambda: tile.nn.SwiGLUMLP(HIDDEN, INTER, **options)),
            ("RMSNorm", lambda: tile.nn.RMSNorm(HIDDEN, **options))]


def measure(make, compiled, steps):
    """(median ms, min ms, peak GiB above the inputs) of one module's step;
    its tensors are freed when it returns."""
    torch._dynamo.reset()
    module = tile.nn.attach_main_grads(make())
    run = torch.compile(module, fullgraph=True) if compiled else module
    x = torch.randn(SEQUENCE, HIDDEN, device="cuda", dtype=torch.bfloat16,
                    requires_grad=True)
    dy = torch.randn(SEQUENCE, HIDDEN, device="cuda", dtype=torch.bfloat16)

    def step():
        run(x).backward(dy)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    step()
    torch.cuda.synchronize()
    peak = (torch.cuda.max_memory_allocated() - base) / 2**30
    times = sorted(timing.step_times(step, steps))
    return times[len(times) // 2], times[0], peak


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--json")
    options = parser.parse_args()
    torch.manual_seed(0)
    rows = []
    for name, make in modules():
        for compiled in (False, True):
            mode = "compiled" if compiled else "eager"
            ms, fastest, peak = measure(make, compiled, options.steps)
            print(f"{name:15s} {mode:8s} median {ms:8.3f} ms  min "
                  f"{fastest:8.3f}  peak above inputs {peak:6.3f} GiB",
                  flush=True)
            rows.append({"case": f"{name} {mode}", "module": name,
                         "mode": mode, "ms": ms, "min_ms": fastest,
                         "peak_gib": peak})
            torch.cuda.empty_cache()
    if options.json:
        results.write(options.json, "compiled_main_grad", rows,
                      dict(vars(options), sequence=SEQUENCE, hidden=HIDDEN,
                           intermediate=INTER, dtype="bf16",
                           torch=torch.__version__))


if __name__ == "__main__":
    main()
