#!/usr/bin/env python3
"""Tile next to PyTorch eager and torch.compile, in one run on one GPU.

Runs on the GPU machine (PyTorch installed), after
`./scripts/gpu-suite.sh bench` wrote tile-bench's JSON:

    TILE_BENCH_JSON=bench.json ./scripts/gpu-suite.sh bench
    python3 scripts/bench-vs-pytorch.py bench.json [--dtypes bf16]

For every kernel, dtype and shape of tile-bench it times the same operation
with PyTorch eager and torch.compile (forward; backward through autograd
with torch.autograd.grad, so nothing accumulates), with CUDA events, warm-up
and the median of many runs, using the same byte conventions. It prints one
table: GB/s of each, Tile's ratio to the ceiling and to the best PyTorch.
"""

import argparse
import json

import torch
import torch.nn.functional as F

torch._dynamo.config.cache_size_limit = 256
# Backward is timed repeatedly on one graph (retain_graph), which donated
# buffers forbid.
torch._functorch.config.donated_buffer = False
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


# Set by main() from tile-bench's JSON: the same timing method on both sides.
# "device": before each timed call the GPU gets a ~40 us stream op (z = x + y
# over 2^24 f32), so the start event fires when the GPU reaches the call and
# the host's per-call cost is hidden; "host-inclusive": from an idle GPU.
AHEAD = None


def median_ms(fn, iterations=50, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if AHEAD is not None:
            AHEAD()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def swiglu(a, b):
    return F.silu(a) * b


def rms_norm(x, w, eps=1e-6):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()
    return y.to(x.dtype)


def measure(kernel, direction, dtype, m, n, fn):
    """GB/s of `fn` (eager or compiled) for one benchmark case."""
    e = torch.tensor([], dtype=dtype).element_size()
    if kernel == "swiglu":
        a = torch.randn(m, n, device="cuda", dtype=dtype, requires_grad=True)
        b = torch.randn(m, n, device="cuda", dtype=dtype, requires_grad=True)
        if direction == "fwd":
            with torch.no_grad():
                ms = median_ms(lambda: fn(a, b))
            return 3 * m * n * e / (ms * 1e-3) / 1e9
        out = fn(a, b)
        dc = torch.randn_like(out)
        ms = median_ms(lambda: torch.autograd.grad(out, (a, b), dc,
                                                   retain_graph=True))
        return 5 * m * n * e / (ms * 1e-3) / 1e9
    x = torch.randn(m, n, device="cuda", dtype=dtype, requires_grad=True)
    w = torch.randn(n, device="cuda", dtype=dtype, requires_grad=True)
    if direction == "fwd":
        with torch.no_grad():
            ms = median_ms(lambda: fn(x, w))
        return (2 * m * n * e + n * e) / (ms * 1e-3) / 1e9
    out = fn(x, w)
    dy = torch.randn_like(out)
    ms = median_ms(lambda: torch.autograd.grad(out, (x, w), dy,
                                               retain_graph=True))
    return (3 * m * n * e + 2 * n * e) / (ms * 1e-3) / 1e9


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bench_json")
    parser.add_argument("--dtypes", default="bf16,f16,f32")
    args = parser.parse_args()
    data = json.load(open(args.bench_json))
    global AHEAD
    timing = data.get("timing", "host-inclusive")
    if timing == "device":
        ax, ay, az = (torch.empty(4096, 4096, device="cuda") for _ in range(3))
        AHEAD = lambda: torch.add(ax, ay, out=az)
    ceiling = next(r for r in data["results"] if r["kernel"].startswith("ceiling"))
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    print(f"ceiling (Tile's 2-read-1-write kernel): {ceiling['gbps']:.0f} GB/s"
          f"; timing: {timing}, both sides")
    header = (f"{'kernel':<14} {'dtype':<5} {'shape':<12} {'Tile':>7} {'eager':>7} "
              f"{'compile':>8} {'Tile/ceil':>9} {'Tile/best':>9} {'same-size':>9}")
    print(header)
    wanted = args.dtypes.split(",")
    # Static shapes, as a training step sees them: one specialization each.
    compiled = {"swiglu": torch.compile(swiglu, dynamic=False),
                "rms_norm": torch.compile(rms_norm, dynamic=False)}
    eager = {"swiglu": swiglu, "rms_norm": rms_norm}
    for r in data["results"]:
        if r["kernel"].startswith("ceiling") or r["dtype"] not in wanted:
            continue
        kernel, direction = r["kernel"].split()
        m, n = (int(v) for v in r["shape"].split("x"))
        dtype = DTYPES[r["dtype"]]
        e_gbps = measure(kernel, direction, dtype, m, n, eager[kernel])
        c_gbps = measure(kernel, direction, dtype, m, n, compiled[kernel])
        best = max(e_gbps, c_gbps)
        # Tile over its own stream kernel run over the same bytes (tile-bench's
        # "same-size"): near 1, a low Tile/ceil is the size's, not the code's.
        same = r.get("stream_same_bytes_ratio")
        print(f"{r['kernel']:<14} {r['dtype']:<5} {r['shape']:<12} "
              f"{r['gbps']:>7.0f} {e_gbps:>7.0f} {c_gbps:>8.0f} "
              f"{r['gbps'] / ceiling['gbps']:>9.2f} {r['gbps'] / best:>9.2f} "
              f"{same if same is not None else float('nan'):>9.2f}",
              flush=True)


if __name__ == "__main__":
    main()
