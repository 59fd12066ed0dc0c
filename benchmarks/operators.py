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
   tile-bench times (a spacer kernel before each call, CUDA events, median:
   timing.gpu_ms).
3. One step of the tiled SwiGLU MLP through tile.ops.swiglu_mlp next to
   tile-bench mlp's tiled step (--tile-bench-mlp JSON of the same run).

    python3 benchmarks/operators.py [--tile-bench bench.json]
        [--tile-bench-mlp mlp.json] [--json out]
"""

import argparse
import statistics

import torch

import peers
import results
import tile
import timing
from peers import EPS


def implementations(with_liger):
    impls = {"tile.ops.rms_norm": lambda x, w: tile.ops.rms_norm(x, w, EPS)}
    others = peers.liger(required=with_liger)
    if others:
        impls["Liger LigerRMSNormFunction"] = others["rms_norm"]
    impls["torch.compile (default)"] = torch.compile(peers.rms_norm_eager)
    return impls


def host_forward_only(impl, x, w, calls=200):
    """Host time of the forward alone, no autograd, GPU kept busy."""
    with torch.no_grad():
        return timing.host_us(lambda: impl(x, w), calls)


def step(impl, x, w, dy):
    y = impl(x, w)
    return torch.autograd.grad(y, (x, w), dy)


def host_block(impl, x, w, dy, steps=40):
    """(host us, GPU us) per step over one block of `steps` steps queued
    behind ~25 ms of GPU work: longer than the host takes to queue them,
    and few enough launches that the launch queue never fills (a full queue
    blocks the host until the GPU catches up). With the queue full the
    events time the GPU's work alone."""
    host, gpu, idle = timing.queued_block(lambda: step(impl, x, w, dy), steps)
    if idle:  # the sleep ended before the host was done
        print(f"  (the GPU went idle while the host queued: {host:.0f} "
              "us/step is host-bound; its GPU time is not)")
    return host, gpu


def host_rounds(impls, x, w, dy, rounds):
    """Every implementation's blocks interleaved, round after round, the
    order rotated each round: a drift of the host's speed (large on a
    shared machine) then falls on every implementation alike instead of
    on whichever ran last."""
    for impl in impls.values():
        for _ in range(20):  # compile, load, autotune
            step(impl, x, w, dy)
    torch.cuda.synchronize()
    names = list(impls)
    blocks = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            blocks[name].append(host_block(impls[name], x, w, dy))
    return blocks


def quartiles(values):
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


SPACERS = {
    # tile-bench's spacer, 8 times: one (~40 us) is shorter than a Python
    # call's host cost, and 8 leave L2 as tile-bench leaves it.
    "stream": timing.stream_spacer(8),
    # ~200 us that touches no memory.
    "sleep": timing.sleep_spacer(400_000),
}


def gpu_time(call, sets, iterations=50, ahead="stream"):
    """tile-bench's method: a spacer, then events around one call of
    `call(set)`, the sets taken in turn."""
    return timing.gpu_ms(call, SPACERS[ahead], sets, iterations)


def shape_times(shape, dtype, ahead):
    """(kernel, shape, ms) of each operator at one shape; its input sets
    are freed when it returns."""
    from tile.kernel_autograd import run_backward
    swiglu = tile.operators.kernel("swiglu")
    rms = tile.operators.kernel("rms_norm")
    r, c = shape
    sets = timing.sets_for(3 * r * c * dtype.itemsize)

    def tensor(*size):
        return torch.randn(*size, device="cuda").to(dtype)
    # The incoming gradient d is a tensor of its own, as in tile-bench (an
    # input passed again would be read from L2).
    io = [(tensor(r, c), tensor(r, c), tensor(c), tensor(r, c))
          for _ in range(sets)]
    rows = []
    if c != 1024:  # tile-bench's SwiGLU shapes
        rows.append(("swiglu fwd", shape, gpu_time(
            lambda s: tile.ops.swiglu(io[s][0], io[s][1]), sets,
            ahead=ahead)))
        rows.append(("swiglu bwd", shape, gpu_time(
            lambda s: run_backward(
                swiglu, [io[s][0], io[s][1]], (io[s][3],), []),
            sets, ahead=ahead)))
    rows.append(("rms_norm fwd", shape, gpu_time(
        lambda s: tile.ops.rms_norm(io[s][0], io[s][2], EPS), sets,
        ahead=ahead)))
    rows.append(("rms_norm bwd", shape, gpu_time(
        lambda s: run_backward(
            rms, [io[s][0], io[s][2], EPS, 0.0], (io[s][3],), []),
        sets, ahead=ahead)))
    return rows


def operator_times(shapes, ahead):
    rows = []
    for shape in shapes:
        for dtype in [torch.bfloat16]:
            rows += shape_times(shape, dtype, ahead)
    return rows


def mlp_times(sequences, hidden=4096, inter=12288):
    """One tiled MLP step (forward + backward, main_grad accumulated) through
    tile.ops.swiglu_mlp, automatic shards, as tile-bench mlp times its tiled
    step: events around forward + backward, median."""
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(3)

    def weight(*shape):
        w = ((torch.rand(*shape, device="cuda", generator=gen) * 2 - 1) *
             0.02).to(torch.bfloat16).requires_grad_(True)
        w.main_grad = torch.zeros(shape, device="cuda")
        return w
    gate, up = weight(inter, hidden), weight(inter, hidden)
    down = weight(hidden, inter)
    for seq in sequences:
        rows.append((seq, mlp_step_ms(seq, hidden, (gate, up, down), gen)))
    return rows


def mlp_step_ms(seq, hidden, weights, gen):
    """One sequence of mlp_times; x and dy are freed when it returns."""
    x = (torch.rand(seq, hidden, device="cuda", generator=gen) * 2 - 1
         ).to(torch.bfloat16).requires_grad_(True)
    dy = ((torch.rand(seq, hidden, device="cuda", generator=gen) * 2 - 1)
          * 0.01).to(torch.bfloat16)

    def step(_):
        x.grad = None
        tile.ops.swiglu_mlp(x, *weights, main_grad=True).backward(dy)
    return gpu_time(step, 1, iterations=10)


def host_table(rounds, with_liger):
    """The host-cost table: RMSNorm forward + backward per step."""
    x = torch.randn(4096, 1024, device="cuda").to(torch.bfloat16)
    x.requires_grad_(True)
    w = (torch.rand(1024, device="cuda") + 0.5).to(torch.bfloat16)
    w.requires_grad_(True)
    dy = torch.randn(4096, 1024, device="cuda").to(torch.bfloat16)
    table = []
    impls = implementations(with_liger)
    print(f"\nRMSNorm forward + backward, 4096x1024 bf16, per step; "
          f"{rounds} interleaved rounds (25 % / median / 75 %):")
    print(f"{'implementation':32} {'host us':>23} {'GPU us':>8} "
          f"{'fwd-only host us':>17}")
    blocks = host_rounds(impls, x, w, dy, rounds)
    for name, impl in impls.items():
        host = quartiles([h for h, _ in blocks[name]])
        gpu = statistics.median(g for _, g in blocks[name])
        forward = host_forward_only(impl, x.detach(), w.detach())
        table.append({"case": "rms_norm fwd+bwd host", "impl": name,
                      "dtype": "bf16", "shape": "4096x1024",
                      "ms": gpu / 1e3, "host_us": host, "gpu_us": gpu,
                      "forward_host_us": forward, "blocks": blocks[name]})
        print(f"{name:32} {host[0]:7.1f} {host[1]:7.1f} {host[2]:7.1f} "
              f"{gpu:8.1f} {forward:17.1f}")
    # Paired: each round's Tile block against the same round's peer block.
    ours = [h for h, _ in blocks["tile.ops.rms_norm"]]
    for name in impls:
        if name == "tile.ops.rms_norm":
            continue
        ratios = [a / h for a, (h, _) in zip(ours, blocks[name])]
        wins = sum(r <= 1 for r in ratios)
        print(f"  tile / {name}: median ratio {statistics.median(ratios):.3f}"
              f", tile at most the peer in {wins} of {len(ratios)} rounds")
    return table


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tile-bench", help="tile-bench --json of this run")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--shapes", default="4096x1024,4096x4096,16384x4096",
                        help="operator shapes ('' for none)")
    parser.add_argument("--tile-bench-mlp",
                        help="tile-bench mlp --json of this run")
    parser.add_argument("--mlp-sequences", default="8192,32768")
    parser.add_argument("--spacer", choices=["stream", "sleep"],
                        default="stream",
                        help="work queued ahead of each timed operator call")
    parser.add_argument("--host-rounds", type=int, default=15,
                        help="interleaved rounds of the host-cost table")
    parser.add_argument("--without-liger", action="store_true",
                        help="leave Liger's row out (else it must import)")
    options = parser.parse_args()
    device = torch.cuda.get_device_name()
    print(f"device: {device}, torch {torch.__version__}")
    rows = []
    if options.host_rounds:
        rows += host_table(options.host_rounds, not options.without_liger)
    bench = {}
    if options.tile_bench:
        for r in results.read(options.tile_bench, "tile-bench")["results"]:
            bench[(r["kernel"], r["dtype"], r["shape"])] = r["ms"]
    shapes = [tuple(int(v) for v in s.split("x"))
              for s in options.shapes.split(",") if s]
    print(f"\nGPU time through Python vs tile-bench (bf16, us, median; "
          f"{options.spacer} spacer):")
    print(f"{'kernel':13} {'shape':>11} {'python':>8} {'tile-bench':>10} "
          f"{'ratio':>6}")
    for kernel, shape, ms in operator_times(shapes, options.spacer):
        key = (kernel, "bf16", f"{shape[0]}x{shape[1]}")
        ref = bench.get(key)
        ratio = ms / ref if ref else float("nan")
        rows.append({"case": kernel, "kernel": kernel, "dtype": key[1],
                     "shape": key[2], "ms": ms, "python_ms": ms,
                     "tile_bench_ms": ref})
        print(f"{kernel:13} {key[2]:>11} {ms * 1e3:8.2f} "
              f"{(ref or float('nan')) * 1e3:10.2f} {ratio:6.3f}")
    mlp_bench = {}
    if options.tile_bench_mlp:
        for r in results.read(options.tile_bench_mlp,
                              "tile-bench mlp")["results"]:
            if r.get("case") == "tiled":
                mlp_bench[r["sequence"]] = r["ms"]
    print("\nTiled MLP step H=4096 I=12288 bf16 through Python vs tile-bench "
          "mlp (ms, median):")
    print(f"{'sequence':>9} {'python':>8} {'tile-bench':>10} {'ratio':>6}")
    for seq, ms in mlp_times(int(s) for s in
                             options.mlp_sequences.split(",") if s):
        ref = mlp_bench.get(seq)
        rows.append({"case": "tiled mlp step", "sequence": seq, "ms": ms,
                     "python_ms": ms, "tile_bench_ms": ref})
        print(f"{seq:9d} {ms:8.2f} {(ref or float('nan')):10.2f} "
              f"{ms / ref if ref else float('nan'):6.3f}")
    if options.json:
        results.write(options.json, "operators", rows,
                      dict(vars(options), torch=torch.__version__),
                      device=device)


if __name__ == "__main__":
    main()
