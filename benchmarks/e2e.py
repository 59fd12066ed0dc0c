#!/usr/bin/env python3
"""End-to-end training step of Llama-3-8B-shaped decoder layers, patched and
not (docs/Performance.md, "end-to-end").

A stack of `--layers` Hugging Face LlamaDecoderLayers at Llama-3-8B's sizes
(hidden 4096, intermediate 14336, 32 heads, 8 KV heads, SDPA attention),
bf16 parameters, batch 1. One step is forward + backward of the stack from
random input embeddings with a random output gradient (no LM head: its
[S, vocab] logits would dominate the memory and are not what these patches
change). Columns, each a fresh model with the same seed:

  eager         the unpatched model
  compile       torch.compile(model) (default mode, static shapes)
  liger         liger_kernel's apply_liger_kernel_to_llama(rope, rms_norm,
                swiglu) on the model instance (its default)
  tile          tile.transformers.apply_tile(model) (RMSNorm, SwiGLU MLP
                and RoPE: its default)
  liger-tiled   Liger's patch plus LigerTiledSwiGLUMLP for every MLP
  tile-tiled    apply_tile(model, tiled_mlp=True)
  and, when asked for by --columns, the two without RoPE:
  liger-norm-mlp, tile-norm-mlp; and tile-compile, torch.compile of the
  model patched by apply_tile (default mode, static shapes)

Per column and sequence: tokens/s (median step of --steps after warm-up),
peak memory (torch.cuda.max_memory_allocated over one step, model and
inputs included, less what earlier columns left allocated; and over one
MLP's forward + backward alone, above its input), and where one
step's GPU time goes (torch.profiler kernel time by kind: GEMMs, attention,
norms, activation, other) with the GPU's idle time in the step, which is
the host's part the GPU could not hide.

Liger patches llama's modules and rotary embedding module-wide, so its
columns run last in a process; run the script twice (two processes) for the
run-to-run spread.

    python3 benchmarks/e2e.py [--sequences 4096,16384,65536]
        [--columns eager,compile,tile,tile-tiled,liger,liger-tiled,
                   tile-norm-mlp,liger-norm-mlp]
        [--layers 2] [--json out.json]
"""

import functools
import time

import torch

import results
import timing
from llama import HIDDEN, llama_layers, parse_options

INTER = 14336
COLUMNS = ["eager", "compile", "tile", "tile-tiled", "tile-norm-mlp",
           "tile-compile", "liger-norm-mlp", "liger", "liger-tiled"]
DEFAULT_COLUMNS = ["eager", "compile", "tile", "tile-tiled", "liger",
                   "liger-tiled"]


def run_order(column):
    """Liger patches llama's classes and (with RoPE) its module-level rotary
    function: a fresh model is Liger's too, so its columns run last, the
    one without RoPE first."""
    return (column.startswith("liger"), column != "liger-norm-mlp")


def patch(model, column):
    """The column's model (patched in place, or compiled)."""
    if column == "eager":
        return model
    if column == "compile":
        return torch.compile(model)
    if column.startswith("tile"):
        import tile.transformers
        tile.transformers.apply_tile(model, tiled_mlp=column == "tile-tiled",
                                     rope=column != "tile-norm-mlp")
        return torch.compile(model) if column == "tile-compile" else model
    from liger_kernel.transformers import apply_liger_kernel_to_llama
    apply_liger_kernel_to_llama(rope=column != "liger-norm-mlp",
                                rms_norm=True, swiglu=True,
                                cross_entropy=False,
                                fused_linear_cross_entropy=False, model=model)
    if column == "liger-tiled":
        from liger_kernel.transformers.tiled_mlp import LigerTiledSwiGLUMLP
        for layer in model.layers:
            tiled = LigerTiledSwiGLUMLP(model.config).to(
                device="cuda", dtype=torch.bfloat16)
            tiled.load_state_dict(layer.mlp.state_dict())
            layer.mlp = tiled
    return model


def step(model, x, dy):
    out = model(inputs_embeds=x, use_cache=False).last_hidden_state
    out.backward(dy)
    for p in model.parameters():
        p.grad = None


# First match wins: flash attention's kernels name cutlass types.
KINDS = [("attention", ("flash", "fmha", "attention", "sdpa")),
         ("gemm", ("gemm", "nvjet", "cutlass", "xmma", "sm90_", "cublas")),
         ("norm", ("rms_norm", "rmsnorm", "rsqrt")),
         ("activation", ("swiglu", "silu", "geglu")),
         ("rope", ("rope", "rotary"))]


def kind_of(name):
    lowered = name.lower()
    for kind, keys in KINDS:
        if any(k in lowered for k in keys):
            return kind
    return "other"


def breakdown(model, x, dy):
    """ms of kernel time by kind in one step, the step's wall time, and the
    GPU's idle time within it."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU,
                             ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        step(model, x, dy)
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) * 1e3
    kinds = {kind: 0.0 for kind, _ in KINDS}
    kinds["other"] = 0.0
    names, intervals = {}, []
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        kinds[kind_of(event.name)] += event.device_time / 1e3
        names[event.name] = names.get(event.name, 0.0) + \
            event.device_time / 1e3
        intervals.append((event.time_range.start, event.time_range.end))
    # Idle: the span from the first kernel's start to the last one's end,
    # less the union of the kernels' intervals.
    intervals.sort()
    first = end = intervals[0][0] if intervals else 0
    busy = 0.0
    for start, stop in intervals:
        busy += max(0.0, stop - max(start, end))
        end = max(end, stop)
    idle = (end - first - busy) / 1e3
    top = sorted(names.items(), key=lambda item: -item[1])[:25]
    return kinds, wall, idle, top


def mlp_memory(model, x, dy):
    """Bytes one layer's MLP allocates at its peak over its forward and
    backward, above its input and output gradient."""
    mlp = model.layers[0].mlp
    inputs = x.detach().requires_grad_(True)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    mlp(inputs).backward(dy)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    for p in model.parameters():
        p.grad = None
    return peak


def measure(column, sequence, layers, steps):
    # What an earlier column left (the caching allocator's live blocks:
    # Triton's and dynamo's caches) is not this column's.
    before = torch.cuda.memory_allocated()
    model = patch(llama_layers(INTER, layers, sequence), column)
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = (torch.randn(1, sequence, HIDDEN, device="cuda", generator=gen)
         ).to(torch.bfloat16)
    dy = (torch.randn(1, sequence, HIDDEN, device="cuda", generator=gen)
          * 1e-3).to(torch.bfloat16)
    # Three warm-up steps: compile, autotune, load.
    ms, fastest, slowest = timing.step_ms(
        functools.partial(step, model, x, dy), steps, warmup=3)
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    step(model, x, dy)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    kinds, wall, idle, top = breakdown(model, x, dy)
    # A compiled model's MLP alone would run eagerly: not measured.
    mlp_peak = None if column.endswith("compile") else \
        mlp_memory(model, x, dy)
    result = {"case": column, "column": column, "sequence": sequence,
              "ms": ms,
              "spread_ms": [fastest, slowest],
              "tokens_per_s": sequence / ms * 1e3,
              "peak_gib": (peak - before) / 2**30,
              "peak_above_model_gib": (peak - base) / 2**30,
              "mlp_peak_gib": mlp_peak / 2**30 if mlp_peak else None,
              "kernels_ms": kinds, "profiled_wall_ms": wall,
              "gpu_idle_ms": idle,
              "top_kernels_ms": [[kind_of(n), n[:120], ms] for n, ms in top]}
    del model, x, dy
    if column.startswith("tile"):  # its RoPE patch is module-wide
        import tile.transformers
        tile.transformers.revert_rope()
    torch._dynamo.reset()
    torch.cuda.empty_cache()
    return result


def main():
    options, columns, sequences = parse_options(COLUMNS, "4096,16384,65536",
                                                5, DEFAULT_COLUMNS)
    columns.sort(key=run_order)
    import transformers
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}"
          f", transformers {transformers.__version__}; {options.layers} "
          f"Llama-3-8B layers, bf16, batch 1, median of {options.steps}")
    header = (f"{'column':12} {'seq':>6} {'ms':>9} {'tokens/s':>9} "
              f"{'peak GiB':>8} {'mlp GiB':>7} | " +
              " ".join(f"{k:>9}" for k, _ in KINDS) +
              f" {'other':>9} {'gpu idle':>9}")
    print(header)
    rows = []
    # Columns outside: Liger patches llama's classes (a fresh model is
    # Liger's too), so nothing may run after its columns.
    for column in columns:
        for sequence in sequences:
            try:
                r = measure(column, sequence, options.layers, options.steps)
            except torch.cuda.OutOfMemoryError:
                print(f"{column:12} {sequence:6d}  out of memory")
                torch.cuda.empty_cache()
                rows.append({"case": column, "column": column,
                             "sequence": sequence, "oom": True, "ms": None})
                continue
            rows.append(r)
            k = r["kernels_ms"]
            print(f"{column:12} {sequence:6d} {r['ms']:9.2f} "
                  f"{r['tokens_per_s']:9.0f} {r['peak_gib']:8.2f} "
                  f"{r['mlp_peak_gib'] or float('nan'):7.2f} | " +
                  " ".join(f"{k[name]:9.2f}" for name, _ in KINDS) +
                  f" {k['other']:9.2f} {r['gpu_idle_ms']:9.2f}", flush=True)
    if options.json:
        results.write(options.json, "e2e", rows,
                      dict(vars(options), torch=torch.__version__,
                           transformers=transformers.__version__))


if __name__ == "__main__":
    main()
