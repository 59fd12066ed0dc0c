#!/usr/bin/env python3
"""Tile next to its peers, fairly: one method for every side, in one run on
one GPU (docs/Performance.md, "a fair side-by-side").

Runs on the GPU machine (PyTorch installed; Liger's pure-Python wheel on
PYTHONPATH for its column), after tile-bench wrote its JSON (once or, for
the spread of its own figures, twice):

    TILE_BENCH_JSON=bench1.json ./scripts/gpu-suite.sh bench
    TILE_BENCH_JSON=bench2.json ./scripts/gpu-suite.sh bench
    TILE_LIBRARY=... PYTHONPATH=python python3 \\
        benchmarks/vs_pytorch.py bench1.json bench2.json [--runs 2]

For every kernel, dtype and shape of tile-bench's table it times the same
operation through Python for each side: Tile (tile.ops), PyTorch eager,
torch.compile (static shapes, one specialization each, as a training step
sees them) and Liger (LigerSiLUMulFunction; LigerRMSNormFunction with its
defaults: llama casting, dY overwritten in place). SwiGLU also has Tile's
in-place backward (tile.ops.swiglu(..., inplace_backward=True), column
tile-inpl): Liger's SwiGLU writes da and db over a and b, which a default
tile.ops.swiglu may not do, so Tile/best sets the default against every peer
and inpl/Liger the two in-place sides against each other. The forward runs under
no_grad; the backward is torch.autograd.grad of the inputs through each
side's own autograd (retain_graph, so nothing accumulates). Every call is
timed by timing.settled_ms: behind queued stream kernels (which also
evict L2) deep enough that the time no longer falls when the queue grows,
input sets rotated as tile-bench rotates them. The whole table is taken
`--runs` times (cases in the same order) and the spread between runs is
printed with it.

Quack is not a column: its CuTe DSL runtime (nvidia-cutlass-dsl-libs-cu13,
a 92 MB wheel, 237 MB unpacked, plus cuda-bindings) exceeds what one call
to the GPU machine may carry (64 MiB), and the machine has no network.

Columns: GB/s with tile-bench's byte conventions; tile-bench's own figure
for the same kernel (C++, no Python in the call) beside Tile's; Tile's
ratio to tile-bench's ceiling (its 2-read-1-write stream kernel), to the
best peer, and tile-bench's same-size stream ratio.
"""

import argparse
import statistics

import torch

import peers
import results
import tile
import timing
from peers import EPS

torch._dynamo.config.cache_size_limit = 256
# Backward is timed repeatedly on one graph (retain_graph), which donated
# buffers forbid.
torch._functorch.config.donated_buffer = False
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


IN_PLACE = "tile-inpl"  # Tile's SwiGLU whose backward writes over a and b


def implementations(with_liger):
    """{kernel: {side: callable}}; Tile first, the sides that overwrite their
    inputs in the backward (Tile's in-place SwiGLU, Liger) last."""
    impls = {
        "swiglu": {"tile": tile.ops.swiglu, "eager": peers.swiglu_eager,
                   "compile": torch.compile(peers.swiglu_eager,
                                            dynamic=False),
                   IN_PLACE: lambda a, b: tile.ops.swiglu(
                       a, b, inplace_backward=True)},
        "rms_norm": {"tile": lambda x, w: tile.ops.rms_norm(x, w, EPS),
                     "eager": peers.rms_norm_eager,
                     "compile": torch.compile(peers.rms_norm_eager,
                                              dynamic=False)},
    }
    for kernel, fn in (peers.liger(required=with_liger) or {}).items():
        impls[kernel]["liger"] = fn
    return impls


def all_sides(per_kernel):
    """Every side of any entry of {kernel or case: {side: ...}}, in order."""
    return list(dict.fromkeys(s for sides in per_kernel.values()
                              for s in sides))


def moved_bytes(kernel, direction, m, n, e):
    """tile-bench's byte conventions."""
    if kernel == "swiglu":
        return (3 if direction == "fwd" else 5) * m * n * e
    return (2 * m * n * e + n * e) if direction == "fwd" else \
        (3 * m * n * e + 2 * n * e)


def make_inputs(kernel, dtype, m, n):
    """One input set: (differentiable inputs, incoming gradient)."""
    def tensor(*size):
        return torch.randn(*size, device="cuda").to(dtype)
    if kernel == "swiglu":
        inputs = (tensor(m, n), tensor(m, n))
    else:
        weight = (torch.rand(n, device="cuda") + 0.5).to(dtype)
        inputs = (tensor(m, n), weight)
    return tuple(t.requires_grad_(True) for t in inputs), tensor(m, n)


def time_side(fn, direction, io):
    """(ms, spacer depth, shallow/deep ratio) of one side on one case, its
    calls rotating through the input sets `io`."""
    if direction == "fwd":
        def call(s):
            with torch.no_grad():
                fn(*io[s][0])
    else:
        outs = [fn(*inputs) for inputs, _ in io]

        def call(s):
            torch.autograd.grad(outs[s], io[s][0], io[s][1],
                                retain_graph=True)
    return timing.settled_ms(call, len(io), iterations=20)


def take_run(cases, impls, run):
    """{case key: {side: (gbps, depth, ratio)}} for one pass over the
    cases, printed as it goes."""
    print(f"\nrun {run}: GB/s (depth of the spacer queue where the time "
          f"settled; '!' where the last deepening still changed it > 3 %)")
    sides = all_sides(impls)
    print(f"{'kernel':<13} {'dtype':<5} {'shape':<11} " +
          " ".join(f"{s:>12}" for s in sides))
    figures = {}
    for key in cases:
        kernel, direction, dtype_name, m, n = key
        dtype = DTYPES[dtype_name]
        e = torch.tensor([], dtype=dtype).element_size()
        moved = moved_bytes(kernel, direction, m, n, e)
        # One set of inputs for every side; Liger, which overwrites its
        # incoming gradient (and, for SwiGLU, its inputs) with the results,
        # goes last.
        io = [make_inputs(kernel, dtype, m, n)
              for _ in range(timing.sets_for(moved))]
        row = {}
        for side, fn in impls[kernel].items():
            ms, depth, ratio = time_side(fn, direction, io)
            row[side] = (moved / (ms * 1e-3) / 1e9, depth, ratio)
        figures[key] = row
        del io
        cells = " ".join(
            f"{row[s][0]:>7.0f} {row[s][1]:>3}"
            f"{'!' if row[s][2] > 1.03 else ' '}" if s in row else " " * 12
            for s in sides)
        print(f"{kernel + ' ' + direction:<13} {dtype_name:<5} "
              f"{f'{m}x{n}':<11} {cells}", flush=True)
        torch.cuda.empty_cache()
    return figures


def summary(cases, runs, benches):
    """The table over all runs: each side's mean GB/s and Tile's ratios,
    worst run first; and the largest difference between runs per side.
    Tile/best is Tile's default (out of place) over the best peer, whatever
    it does; inpl/Liger sets the sides that overwrite their inputs side by
    side (SwiGLU)."""
    ceilings = [next(r["gbps"] for r in b["results"]
                     if r["kernel"].startswith("ceiling")) for b in benches]
    sides = all_sides(runs[0])
    print(f"\nsummary over {len(runs)} runs (GB/s: mean of the runs; ratios:"
          f" the lowest run's / the highest's); tile-bench ceiling "
          + " / ".join(f"{c:.0f}" for c in ceilings) + " GB/s")
    print(f"{'kernel':<13} {'dtype':<5} {'shape':<11} {'tile-bench':>10} " +
          " ".join(f"{s:>9}" for s in sides) +
          f" {'Tile/best':>11} {'inpl/Liger':>11} {'Tile/ceil':>11}"
          f" {'same-size':>9}")
    spread = {s: 0.0 for s in sides + ["tile-bench"]}
    table = []
    for key in cases:
        kernel, direction, dtype_name, m, n = key
        bench_rows = [next(r for r in b["results"]
                           if r["kernel"] == f"{kernel} {direction}"
                           and r["dtype"] == dtype_name
                           and r["shape"] == f"{m}x{n}") for b in benches]
        present = [s for s in sides if s in runs[0][key]]
        peers = [s for s in present if s not in ("tile", IN_PLACE)]
        mean = {s: statistics.mean(run[key][s][0] for run in runs)
                for s in present}
        for s in present:
            values = [run[key][s][0] for run in runs]
            spread[s] = max(spread[s], max(values) / min(values) - 1)
        bench_gbps = [r["gbps"] for r in bench_rows]
        spread["tile-bench"] = max(spread["tile-bench"],
                                   max(bench_gbps) / min(bench_gbps) - 1)
        over_best = [run[key]["tile"][0] / max(run[key][p][0] for p in peers)
                     for run in runs]
        in_place = ([run[key][IN_PLACE][0] / run[key]["liger"][0]
                     for run in runs]
                    if {IN_PLACE, "liger"} <= set(present) else None)
        over_ceiling = [g / c for g, c in zip(bench_gbps, ceilings)]
        same = [r.get("stream_same_bytes_ratio") or float("nan")
                for r in bench_rows]
        e = torch.tensor([], dtype=DTYPES[dtype_name]).element_size()
        moved = moved_bytes(kernel, direction, m, n, e)
        table.append({"case": f"{kernel} {direction}",
                      "kernel": f"{kernel} {direction}", "dtype": dtype_name,
                      "shape": f"{m}x{n}",
                      "ms": statistics.mean(moved / (run[key]["tile"][0] * 1e6)
                                            for run in runs),
                      "gbps": mean,
                      "tile_bench_gbps": bench_gbps,
                      "tile_over_best_peer": over_best,
                      "in_place_over_liger": in_place,
                      "tile_bench_over_ceiling": over_ceiling,
                      "same_size": same,
                      "runs": [{s: run[key][s] for s in present}
                               for run in runs]})
        in_place_cell = (f"{min(in_place):>5.2f}/{max(in_place):<5.2f}"
                         if in_place else " " * 11)
        print(f"{kernel + ' ' + direction:<13} {dtype_name:<5} "
              f"{f'{m}x{n}':<11} {statistics.mean(bench_gbps):>10.0f} " +
              " ".join(f"{mean[s]:>9.0f}" if s in mean else " " * 9
                       for s in sides) +
              f" {min(over_best):>5.2f}/{max(over_best):<5.2f}"
              f" {in_place_cell}"
              f" {min(over_ceiling):>5.2f}/{max(over_ceiling):<5.2f}"
              f" {min(same):>9.2f}", flush=True)
    print("largest difference between runs, per side: " +
          ", ".join(f"{s} {100 * v:.1f} %" for s, v in spread.items()))
    return table, spread


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bench_json", nargs="+",
                        help="tile-bench --json of this lease, one per run")
    parser.add_argument("--dtypes", default="bf16,f16,f32")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--without-liger", action="store_true",
                        help="leave Liger's column out (else it must import)")
    options = parser.parse_args()
    benches = [results.read(path, "tile-bench")
               for path in options.bench_json]
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    wanted = options.dtypes.split(",")
    cases = []
    for r in benches[0]["results"]:
        if r["kernel"].startswith("ceiling") or r["dtype"] not in wanted:
            continue
        kernel, direction = r["kernel"].split()
        m, n = (int(v) for v in r["shape"].split("x"))
        cases.append((kernel, direction, r["dtype"], m, n))
    impls = implementations(not options.without_liger)
    runs = [take_run(cases, impls, run + 1) for run in range(options.runs)]
    table, spread = summary(cases, runs, benches)
    if options.json:
        results.write(options.json, "vs_pytorch", table,
                      dict(vars(options), torch=torch.__version__),
                      extra={"spread_between_runs": spread})


if __name__ == "__main__":
    main()
