#!/usr/bin/env python3
"""The Python layer's costs, on the GPU machine (docs/Performance.md).

1. Host cost per call: tile.ops.rms_norm forward + backward at 4096x1024
   bf16, next to Liger's LigerRMSNormFunction and torch.compile's RMSNorm,
   in one run. The GPU is kept busy (a sleep kernel queued first), so the
   host's time per step is what the CPU spends from the Python call to the
   last launch; the GPU-side time per step is measured beside it with the
   queue full.
2. GPU time of each tile.ops operator through Python next to tile-bench's
   figure for the same kernel (--tile-bench JSON of the same run), timed as
   tile-bench times (a spacer kernel before each call, CUDA events, median).

    python3 scripts/bench-python.py [--tile-bench bench.json] [--json out]
"""

import argparse
import json
import statistics
import time

import torch

import tile

EPS = 1e-6


def rms_reference(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) *
            w.float()).to(x.dtype)


def implementations():
    impls = {"tile.ops.rms_norm": lambda x, w: tile.ops.rms_norm(x, w, EPS)}
    try:
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
        # Liger's defaults in LigerRMSNorm (llama casting, in-place
        # backward of dY: its fastest path).
        impls["Liger LigerRMSNormFunction"] = (
            lambda x, w: LigerRMSNormFunction.apply(x, w, EPS, 0.0, "llama",
                                                    True))
    except ImportError as error:
        print(f"Liger not available ({error}): left out")
    impls["torch.compile (default)"] = torch.compile(rms_reference)
    return impls


def host_forward_only(impl, x, w, calls=200):
    """Host time of the forward alone, no autograd, GPU kept busy."""
    with torch.no_grad():
        for _ in range(5):
            impl(x, w)
        torch.cuda.synchronize()
        torch.cuda._sleep(100_000_000)
        t0 = time.perf_counter()
        for _ in range(calls):
            impl(x, w)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def step(impl, x, w, dy):
    y = impl(x, w)
    return torch.autograd.grad(y, (x, w), dy)


def host_and_device(impl, x, w, dy, steps=40, repeats=7):
    for _ in range(20):  # compile, load, autotune
        step(impl, x, w, dy)
    torch.cuda.synchronize()
    host, device = [], []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        # ~25 ms of queued GPU work: longer than the host takes to queue
        # the steps, and few enough launches that the launch queue never
        # fills (a full queue blocks the host until the GPU catches up).
        torch.cuda._sleep(50_000_000)
        start.record()
        t0 = time.perf_counter()
        for _ in range(steps):
            step(impl, x, w, dy)
        t1 = time.perf_counter()
        stop.record()
        idle = start.query()  # the sleep ended before the host was done
        torch.cuda.synchronize()
        if idle:
            print(f"  (the GPU went idle while the host queued: "
                  f"{(t1 - t0) / steps * 1e6:.0f} us/step is host-bound)")
        host.append((t1 - t0) / steps * 1e6)
        # With the queue full the events time the GPU's work alone.
        device.append(start.elapsed_time(stop) / steps * 1e3)
    return statistics.median(host), statistics.median(device)


def gpu_time(call, iterations=50):
    """tile-bench's method: a spacer kernel, then events around one call."""
    for _ in range(5):
        call()
    times = []
    for _ in range(iterations):
        # ~200 us: the host's cost of the call is hidden (tile-bench
        # queues ~40 us ahead of its own C++ call).
        torch.cuda._sleep(400_000)
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def operator_times(shapes):
    from tile import autograd
    rows = []
    for shape in shapes:
        r, c = shape
        for dtype in [torch.bfloat16]:
            a = torch.randn(r, c, device="cuda").to(dtype)
            b = torch.randn(r, c, device="cuda").to(dtype)
            w = torch.randn(c, device="cuda").to(dtype)
            # The incoming gradient is a tensor of its own, as in
            # tile-bench (an input passed again would be read from L2).
            d = torch.randn(r, c, device="cuda").to(dtype)
            swiglu = tile.ops._kernel("swiglu")
            rms = tile.ops._kernel("rms_norm")
            if c != 1024:  # tile-bench's SwiGLU shapes
                rows.append(("swiglu fwd", shape, gpu_time(
                    lambda: tile.ops.swiglu(a, b))))
                rows.append(("swiglu bwd", shape, gpu_time(
                    lambda: autograd.backward(swiglu, [a, b], (d,), []))))
            rows.append(("rms_norm fwd", shape, gpu_time(
                lambda: tile.ops.rms_norm(a, w, EPS))))
            rows.append(("rms_norm bwd", shape, gpu_time(
                lambda: autograd.backward(rms, [a, w, EPS, 0.0], (d,), []))))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tile-bench", help="tile-bench --json of this run")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--shapes", default="4096x1024,4096x4096,16384x4096")
    options = parser.parse_args()
    device = torch.cuda.get_device_name()
    print(f"device: {device}, torch {torch.__version__}")
    x = torch.randn(4096, 1024, device="cuda").to(torch.bfloat16)
    x.requires_grad_(True)
    w = (torch.rand(1024, device="cuda") + 0.5).to(torch.bfloat16)
    w.requires_grad_(True)
    dy = torch.randn(4096, 1024, device="cuda").to(torch.bfloat16)
    results = {"device": device, "host": [], "operators": []}
    print("\nRMSNorm forward + backward, 4096x1024 bf16, per step:")
    print(f"{'implementation':32} {'host us':>9} {'GPU us':>9} "
          f"{'fwd-only host us':>17}")
    for name, impl in implementations().items():
        host, gpu = host_and_device(impl, x, w, dy)
        forward = host_forward_only(impl, x.detach(), w.detach())
        results["host"].append({"impl": name, "host_us": host, "gpu_us": gpu,
                                "forward_host_us": forward})
        print(f"{name:32} {host:9.1f} {gpu:9.1f} {forward:17.1f}")
    bench = {}
    if options.tile_bench:
        for r in json.load(open(options.tile_bench))["results"]:
            bench[(r["kernel"], r["dtype"], r["shape"])] = r["ms"]
    shapes = [tuple(int(v) for v in s.split("x"))
              for s in options.shapes.split(",")]
    print("\nGPU time through Python vs tile-bench (bf16, us, median):")
    print(f"{'kernel':13} {'shape':>11} {'python':>8} {'tile-bench':>10} "
          f"{'ratio':>6}")
    for kernel, shape, ms in operator_times(shapes):
        key = (kernel, "bf16", f"{shape[0]}x{shape[1]}")
        ref = bench.get(key)
        ratio = ms / ref if ref else float("nan")
        results["operators"].append({"kernel": kernel, "shape": key[2],
                                     "python_ms": ms, "tile_bench_ms": ref})
        print(f"{kernel:13} {key[2]:>11} {ms * 1e3:8.2f} "
              f"{(ref or float('nan')) * 1e3:10.2f} {ratio:6.3f}")
    if options.json:
        json.dump(results, open(options.json, "w"), indent=1)


if __name__ == "__main__":
    main()
