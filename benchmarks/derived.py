#!/usr/bin/env python3
"""Derived kernels next to torch.compile's, for any kernel (issue 48).

Every kernel of test/Zoo and examples/ runs as a training step does: its
forward, then torch.autograd.grad of its differentiable inputs. Tile's side
is tile.Kernel (the backward derived by tile-differentiate). The peer that
makes the same promise is torch.compile of the same function written in
PyTorch: AOTAutograd derives the backward and Inductor generates both
kernels. It is compiled for each shape (dynamic=False, its best case), in
its default mode. PyTorch eager is the third column. A kernel with a row
reduction also runs under Tile's save-row-stats policy (the forward keeps
the row statistics for the backward), in a column of its own.

Each case runs at 4096 x 1024, 16384 x 4096 and 65536 x 256, and 16-bit
kernels also at 65536 x 128 (rows x the kernel's row width). Every step is
timed by timing.settled_ms: behind queued kernels deep enough that the
host's cost is hidden, input sets rotated so that none is in L2. A step's
GB/s counts the bytes it must move: each tensor input read by the forward
and again by the backward (which recomputes), each output written and its
gradient read, each input gradient written. The copy ceiling is a
device-to-device copy of as many bytes (half read, half written), timed
the same way: "of ceiling" is a side's GB/s over it.

Before the timing, each case is checked on the GPU against float64: the
kernel's outputs and gradients, Tile's and torch.compile's, within the
GPU suite's tolerance for the dtype, every output poisoned with NaN before
it is written. The host's time per step (a sleep keeps the GPU busy, so
what is counted is the CPU's alone) is taken at 4096 x 1024.

    TILE_LIBRARY=... PYTHONPATH=python python3 benchmarks/derived.py \\
        [--runs 2] [--kernels a,b] [--shapes 4096x1024,...] [--json out]
    python3 benchmarks/derived.py --report out1.json [out2.json ...]
    python3 benchmarks/derived.py --profile-host rms_norm

With --report it reads the JSON of earlier invocations (each may hold a
part of the kernels) and prints the summary table (Markdown) over all of
them. --profile-host KERNEL profiles Tile's host time per step (cProfile,
the GPU kept busy) at 4096 x 1024.
"""

import argparse
import math
import statistics
from pathlib import Path

import torch

import results
import timing

ROOT = Path(__file__).resolve().parent.parent
SHAPES = [(4096, 1024), (16384, 4096), (65536, 256)]
NARROW_16_BIT = (65536, 128)
HOST_SHAPE = (4096, 1024)
# The GPU suite's tolerances: |got - ref| <= atol * max(1, max|ref|) +
# rtol * |ref| (python/tests/conftest.py).
TOLERANCES = {torch.float32: (1e-4, 1e-4), torch.bfloat16: (1e-2, 2e-2)}


# -- the kernels, as PyTorch users write them ---------------------------------

def _up(t):
    """16-bit storage computed in f32, as the kernels do (float64 stays)."""
    return t.float() if t.dtype in (torch.bfloat16, torch.float16) else t


def _gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) *
                                     (x + 0.044715 * x ** 3)))


def geglu(a, b):
    return (_gelu_tanh(_up(a)) * _up(b)).to(a.dtype)


def swiglu(a, b):
    a32 = _up(a)
    return (a32 * torch.sigmoid(a32) * _up(b)).to(a.dtype)


def silu_and_mul(x):
    a, b = _up(x).chunk(2, dim=-1)
    return (a * torch.sigmoid(a) * b).to(x.dtype)


def softcap(x, cap):
    return (torch.tanh(_up(x) / cap) * cap).to(x.dtype)


def squared_relu(x):
    return (torch.relu(_up(x)) ** 2).to(x.dtype)


def three_uses(x):
    u = x / 2
    return u ** 3 + u ** 2 + torch.sin(u)


def softmax(x):
    return torch.softmax(x, -1)


def rms_norm(x, w, eps, offset):
    x32 = _up(x)
    rstd = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (x32 * rstd * (_up(w) + offset)).to(x.dtype)


def layer_norm(x, w, b, eps):
    x32 = _up(x)
    mu = x32.mean(-1, keepdim=True)
    var = (x32 - mu).pow(2).mean(-1, keepdim=True)
    return ((x32 - mu) * torch.rsqrt(var + eps) * _up(w) + _up(b)).to(x.dtype)


def residual_rms_norm(x, r, w, alpha, eps):
    h = _up(x) + alpha * _up(r)
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * _up(w)
    return y.to(x.dtype), h.to(x.dtype)


def rope(x, cos, sin, sign):
    """examples/rope.mlir: each head of cos' width D rotated by its halves
    swapped, sign (+-1 per column) giving rotate_half's minus."""
    d = cos.shape[-1]
    heads = x.shape[-1] // d
    x32 = _up(x).unflatten(-1, (heads, d))
    swapped = torch.cat([x32[..., d // 2:], x32[..., :d // 2]], -1)
    y = x32 * _up(cos).unsqueeze(-2) + \
        swapped * (_up(sin) * sign).unsqueeze(-2)
    return y.flatten(-2).to(x.dtype)


def cross_entropy(logits, labels, ignore, eps, z):
    """examples/cross_entropy.mlir per row: label smoothing eps, z-loss z,
    rows whose label is `ignore` 0."""
    x = _up(logits)
    lse = torch.logsumexp(x, -1)
    valid = labels != int(ignore)
    target = x.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    loss = lse - (1 - eps) * target - eps * x.mean(-1) + z * lse * lse
    return torch.where(valid, loss, torch.zeros_like(loss))


class Case:
    """One kernel: its source, the PyTorch function, and its arguments at
    (rows, width) in `dtype` (tensors on the GPU; scalars as they are)."""

    def __init__(self, name, reference, make, dtype, source=None):
        self.name = name
        self.reference = reference
        self.make = make
        self.dtype = dtype
        path = ROOT / "test" / "Zoo" / f"{source or name}.mlir"
        self.source = path if path.exists() else \
            ROOT / "examples" / f"{source or name}.mlir"

    def shapes(self):
        narrow = [NARROW_16_BIT] if self.dtype != torch.float32 else []
        return SHAPES + narrow


# Where the argument makers put their tensors: the GPU, or the CPU for the
# test that checks each PyTorch function against its kernel
# (python/tests/test_derived_benchmark.py).
DEVICE = "cuda"


def _randn(shape, dtype, scale=1.0):
    return (torch.randn(shape, device=DEVICE) * scale).to(dtype)


def _one(dtype):
    return lambda r, w: [_randn((r, w), dtype)]


def _two(dtype):
    return lambda r, w: [_randn((r, w), dtype), _randn((r, w), dtype)]


def _weight(w, dtype):
    return (torch.rand(w, device=DEVICE) + 0.5).to(dtype)


def _rope_args(r, w):
    d = min(w, 128)
    angle = torch.rand(r, d, device=DEVICE) * 6.28
    sign = torch.ones(d, device=DEVICE)
    sign[:d // 2] = -1
    return [_randn((r, w), torch.bfloat16), angle.cos().bfloat16(),
            angle.sin().bfloat16(), sign]


def _cross_entropy_args(r, w):
    labels = torch.randint(0, w, (r,), device=DEVICE)
    labels[::10] = -100
    return [_randn((r, w), torch.bfloat16, 4.0), labels, -100.0, 0.1, 1e-4]


def _distribution_args(r, w):
    target = torch.softmax(torch.randn(r, w, device=DEVICE), -1)
    return [_randn((r, w), torch.bfloat16), target.bfloat16()]


def _uniform_args(r, w):
    """Values in [-2, 2): bf16 rows of a thousand repeat their maximum and
    minimum, whose cotangent Tile, like PyTorch's amax and amin, shares
    evenly among the tied elements."""
    return [(torch.rand(r, w, device=DEVICE) * 4 - 2).bfloat16(), 1e-5]


def logsumexp(x):
    return torch.logsumexp(_up(x), -1)


def soft_cross_entropy(logits, target):
    """Cross-entropy against a distribution (target is not differentiated),
    one value per row."""
    x = _up(logits)
    return torch.logsumexp(x, -1) - (_up(target) * x).sum(-1)


def min_max_scale(x, eps):
    x32 = _up(x)
    low = x32.amin(-1, keepdim=True)
    return ((x32 - low) / (x32.amax(-1, keepdim=True) - low + eps)).to(
        x.dtype)


BF16, F32 = torch.bfloat16, torch.float32
CASES = [
    Case("swiglu", swiglu, _two(BF16), BF16),
    Case("geglu", geglu, _two(BF16), BF16),
    Case("silu_and_mul", silu_and_mul, _one(BF16), BF16),
    Case("softcap", softcap,
         lambda r, w: [_randn((r, w), BF16, 20.0), 30.0], BF16),
    Case("squared_relu", squared_relu, _one(BF16), BF16),
    Case("three_uses", three_uses, _one(F32), F32),
    Case("softmax", softmax, _one(F32), F32),
    Case("rms_norm", rms_norm,
         lambda r, w: [_randn((r, w), BF16), _weight(w, BF16), 1e-6, 0.0],
         BF16),
    Case("layer_norm", layer_norm,
         lambda r, w: [_randn((r, w), BF16), _weight(w, BF16),
                       _weight(w, BF16), 1e-5], BF16),
    Case("residual_rms_norm", residual_rms_norm,
         lambda r, w: [_randn((r, w), BF16), _randn((r, w), BF16),
                       _weight(w, BF16), 0.5, 1e-6], BF16),
    Case("rope", rope, _rope_args, BF16),
    Case("cross_entropy", cross_entropy, _cross_entropy_args, BF16),
    Case("soft_cross_entropy", soft_cross_entropy, _distribution_args, BF16),
    Case("logsumexp", logsumexp, _one(BF16), BF16),
    Case("min_max_scale", min_max_scale, _uniform_args, BF16),
]


# -- one case ------------------------------------------------------------------

def _tensors(values):
    return [v for v in values if isinstance(v, torch.Tensor)]


def _nbytes(t):
    return t.numel() * t.element_size()


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


class Step:
    """One side's training step over input sets: the forward, then the
    gradients of the differentiable inputs against fixed incoming
    gradients."""

    def __init__(self, fn, sets, differentiable):
        self.fn, self.sets, self.differentiable = fn, sets, differentiable

    def __call__(self, s):
        args, seeds = self.sets[s]
        leaves = [args[i] for i in self.differentiable]
        outs = _as_tuple(self.fn(*args))
        return outs, torch.autograd.grad(outs, leaves, seeds[:len(outs)])


def _input_sets(case, rows, width, differentiable, count):
    """`count` sets of (arguments, incoming gradients), the differentiable
    tensors requiring grad."""
    sets = []
    for _ in range(count):
        args = case.make(rows, width)
        for i in differentiable:
            args[i].requires_grad_(True)
        with torch.no_grad():
            outs = _as_tuple(case.reference(*args))
        seeds = [_randn(o.shape, o.dtype) for o in outs]
        sets.append((args, seeds))
    return sets


def step_bytes(args, outs, differentiable):
    """What a recomputing step must move: tensor inputs twice, outputs and
    their gradients, the inputs' gradients."""
    inputs = sum(_nbytes(t) for t in _tensors(args))
    outputs = sum(_nbytes(o) for o in outs)
    grads = sum(_nbytes(args[i]) for i in differentiable)
    return 2 * inputs + 2 * outputs + grads


def _poison():
    """Freed blocks of the caching allocator hold NaN, in both its pools (a
    block of at most 1 MiB, a row result or a weight gradient, comes from
    the small one): a result a side leaves unwritten cannot pass the
    check."""
    block = torch.full((1 << 28,), float("nan"), device="cuda")
    small = [torch.full((1 << 18,), float("nan"), device="cuda")
             for _ in range(64)]
    del block, small


def _close(got, ref, dtype):
    atol, rtol = TOLERANCES[dtype]
    got, ref = got.double(), ref.double()
    scale = max(1.0, ref.abs().max().item()) if ref.numel() else 1.0
    bound = atol * scale + rtol * ref.abs()
    return bool(torch.isfinite(got).all()) and \
        bool(((got - ref).abs() <= bound).all())


def check(case, sides, rows, width, differentiable):
    """(checks, failures): each side's outputs and gradients against the
    reference in float64, on one input set."""
    (args, seeds), = _input_sets(case, rows, width, differentiable, 1)
    wide = [a.detach().double().requires_grad_(a.requires_grad)
            if isinstance(a, torch.Tensor) and a.is_floating_point() else a
            for a in args]
    want = Step(case.reference, [(wide, [s.double() for s in seeds])],
                differentiable)(0)
    checks, failures = 0, []
    for side, fn in sides.items():
        _poison()
        got = Step(fn, [(args, seeds)], differentiable)(0)
        for kind, g_list, w_list in (("output", got[0], want[0]),
                                     ("gradient", got[1], want[1])):
            for i, (g, w) in enumerate(zip(g_list, w_list)):
                checks += 1
                if not _close(g, w, case.dtype):
                    failures.append(f"{case.name} {rows}x{width} {side} "
                                    f"{kind} {i}")
    return checks, failures


def ceiling_gbps(nbytes):
    """GB/s of a device-to-device copy moving `nbytes` (half read, half
    written), timed as the sides are."""
    half = max(nbytes // 2, 1)
    sets = timing.sets_for(nbytes)
    pairs = [(torch.empty(half, dtype=torch.uint8, device="cuda"),
              torch.empty(half, dtype=torch.uint8, device="cuda"))
             for _ in range(sets)]
    ms, _, _ = timing.settled_ms(lambda s: pairs[s][1].copy_(pairs[s][0]),
                                 sets)
    return nbytes / (ms * 1e-3) / 1e9


def differentiable_inputs(case, kernel, width):
    """The indices of the arguments the kernel differentiates."""
    return [i for i, (a, info) in enumerate(
        zip(case.make(2, width), kernel.forward_info.arguments))
        if isinstance(a, torch.Tensor) and info.differentiable]


def reduces_over_rows(case):
    """Whether the kernel has a row reduction, whose statistics the
    save-row-stats policy keeps for the backward (a second Tile column)."""
    text = case.source.read_text()
    return "tile.reduce" in text and "[1]" in text


def run_case(case, shape, kernel, compiled, with_host, saved=None):
    """{"case", "kernel", "shape", sides' ms, ceiling, checks} at one
    shape; `saved`: the kernel under save-row-stats, timed as
    "tile-stats"."""
    rows, width = shape
    differentiable = differentiable_inputs(case, kernel, width)
    sides = {"tile": kernel, "compile": compiled, "eager": case.reference}
    if saved is not None:
        sides["tile-stats"] = saved
    checks, failures = check(case, sides, rows, width, differentiable)
    probe, = _input_sets(case, rows, width, differentiable, 1)
    with torch.no_grad():
        outs = _as_tuple(case.reference(*probe[0]))
    moved = step_bytes(probe[0], outs, differentiable)
    del probe, outs
    sets = _input_sets(case, rows, width, differentiable,
                       timing.sets_for(moved))
    row = {"case": f"{case.name} {rows}x{width}", "kernel": case.name,
           "shape": f"{rows}x{width}", "dtype": str(case.dtype)[6:],
           "bytes": moved, "checks": checks, "failures": failures, "ms": {},
           "depth": {}, "settle_ratio": {}, "host_us": {}}
    for side, fn in sides.items():
        step = Step(fn, sets, differentiable)
        ms, depth, ratio = timing.settled_ms(step, len(sets), iterations=20)
        row["ms"][side], row["depth"][side] = ms, depth
        row["settle_ratio"][side] = ratio
        if with_host and side in ("tile", "compile"):
            row["host_us"][side] = timing.host_us(lambda: step(0), calls=100)
    del sets
    torch.cuda.empty_cache()
    row["ceiling_gbps"] = ceiling_gbps(moved)
    return row


def take_run(cases, shapes_filter, run):
    rows = []
    print(f"\nrun {run}: ms per step (forward + backward), GPU time; "
          f"compile/tile > 1: Tile faster", flush=True)
    import tile
    for case in cases:
        kernel = tile.Kernel(case.source)
        saved = tile.Kernel(case.source, policy="save-row-stats") \
            if reduces_over_rows(case) else None
        # Specialized for each shape (dynamic=False: each new shape
        # compiles anew, never a dynamic graph), compiled on first use.
        compiled = torch.compile(case.reference, dynamic=False)
        for shape in case.shapes():
            if shapes_filter and shape not in shapes_filter:
                continue
            row = run_case(case, shape, kernel, compiled,
                           with_host=shape == HOST_SHAPE, saved=saved)
            row["run"] = run
            rows.append(row)
            ms = row["ms"]
            print(f"{case.name:<18} {row['shape']:<11} tile "
                  f"{ms['tile']:8.4f}  compile {ms['compile']:8.4f}  eager "
                  f"{ms['eager']:8.4f}  compile/tile "
                  f"{ms['compile'] / ms['tile']:5.2f}  checks "
                  f"{row['checks'] - len(row['failures'])}/{row['checks']}",
                  flush=True)
    return rows


# -- the summary ------------------------------------------------------------------

def summary(rows):
    """The Markdown table over every run of every case, and the totals."""
    by_case = {}
    for row in rows:
        by_case.setdefault((row["kernel"], row["shape"]), []).append(row)
    lines = ["| kernel | shape | Tile ms | compile ms | eager ms | "
             "compile / Tile | Tile of ceiling | compile of ceiling | "
             "compile / Tile (save-row-stats) |",
             "|---|---|---|---|---|---|---|---|---|"]
    ratios, wins, cells, checks, failures = [], 0, 0, 0, []
    for (kernel, shape), runs in by_case.items():
        per_run = [r["ms"]["compile"] / r["ms"]["tile"] for r in runs]
        mean = {s: statistics.mean(r["ms"][s] for r in runs)
                for s in ("tile", "compile", "eager")}
        of_ceiling = {s: statistics.mean(
            r["bytes"] / (r["ms"][s] * 1e-3) / 1e9 / r["ceiling_gbps"]
            for r in runs) for s in ("tile", "compile")}
        ratio = statistics.mean(per_run)
        ratios.append(ratio)
        cells += 1
        wins += max(per_run) >= 1.0
        for r in runs:
            checks += r["checks"]
            failures += r["failures"]
        spread = "/".join(f"{v:.2f}" for v in per_run)
        stats = "/".join(f"{r['ms']['compile'] / r['ms']['tile-stats']:.2f}"
                         for r in runs if "tile-stats" in r["ms"]) or "—"
        lines.append(f"| {kernel} | {shape} | {mean['tile']:.4f} | "
                     f"{mean['compile']:.4f} | {mean['eager']:.4f} | "
                     f"{spread} | {of_ceiling['tile']:.2f} | "
                     f"{of_ceiling['compile']:.2f} | {stats} |")
    geomean = math.exp(statistics.mean(math.log(r) for r in ratios))
    lines.append("")
    lines.append(f"geometric mean of compile / Tile: {geomean:.3f}; "
                 f"{wins} of {cells} cells >= 1.0 in some run; "
                 f"{checks - len(failures)} of {checks} checks passed")
    host = [r for r in rows if r["host_us"]]
    if host:
        lines.append("host us per step at " +
                     f"{HOST_SHAPE[0]}x{HOST_SHAPE[1]}: " + ", ".join(
                         f"{r['kernel']} {r['host_us']['tile']:.0f} / "
                         f"{r['host_us']['compile']:.0f}" for r in host) +
                     " (tile / compile)")
    for f in failures:
        lines.append(f"FAILED: {f}")
    return "\n".join(lines)


def profile_host(case, calls=300):
    """Where Tile's host time per step goes: cProfile over `calls` steps at
    the host shape, queued behind a sleep (the GPU never makes the host
    wait), the functions with the most time of their own first."""
    import cProfile
    import pstats

    import tile
    kernel = tile.Kernel(case.source)
    rows, width = HOST_SHAPE
    differentiable = differentiable_inputs(case, kernel, width)
    step = Step(kernel, _input_sets(case, rows, width, differentiable, 1),
                differentiable)
    for _ in range(10):
        step(0)
    torch.cuda.synchronize()
    us = timing.host_us(lambda: step(0), calls=calls)
    torch.cuda._sleep(400_000_000)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        step(0)
    profiler.disable()
    torch.cuda.synchronize()
    print(f"{case.name} {rows}x{width}: {us:.0f} us of host time per step "
          f"(unprofiled); profiled, by own time:")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def profile_kernels(case, shapes_filter, steps=50):
    """Each side's GPU kernels per step (torch.profiler, device time), at
    each shape: which kernel of a step loses, and by how much."""
    import tile
    from torch.profiler import ProfilerActivity, profile
    kernel = tile.Kernel(case.source)
    sides = {"tile": kernel, "compile": torch.compile(case.reference,
                                                       dynamic=False)}
    for shape in case.shapes():
        if shapes_filter and shape not in shapes_filter:
            continue
        rows, width = shape
        differentiable = differentiable_inputs(case, kernel, width)
        sets = _input_sets(case, rows, width, differentiable, 1)
        for side, fn in sides.items():
            step = Step(fn, sets, differentiable)
            for _ in range(5):
                step(0)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(steps):
                    step(0)
                torch.cuda.synchronize()
            print(f"{case.name} {rows}x{width} {side}: us per step")
            for event in sorted(prof.key_averages(),
                                key=lambda e: -e.device_time_total):
                if event.device_time_total <= 0:
                    continue
                print(f"  {event.device_time_total / steps:8.2f}  "
                      f"x{event.count / steps:g}  {event.key[:90]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--kernels", default="",
                        help="comma-separated kernel names (default: all)")
    parser.add_argument("--shapes", default="",
                        help="comma-separated RxW (default: every shape)")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--report", nargs="+",
                        help="print the summary of these JSON files")
    parser.add_argument("--profile-host", metavar="KERNEL",
                        help="profile Tile's host time per step instead")
    parser.add_argument("--profile-kernels", metavar="KERNEL",
                        help="list each side's GPU kernels per step "
                             "instead (--shapes selects shapes)")
    args = parser.parse_args()
    if args.report:
        rows = [row for path in args.report
                for row in results.read(path, "derived")["results"]]
        print(summary(rows))
        return
    by_name = {c.name: c for c in CASES}

    def case_named(name):
        if name not in by_name:
            parser.error(f"unknown kernel: {name}")
        return by_name[name]

    if args.profile_host:
        profile_host(case_named(args.profile_host))
        return
    shapes = {tuple(int(v) for v in s.split("x"))
              for s in filter(None, args.shapes.split(","))}
    if args.profile_kernels:
        case = case_named(args.profile_kernels)
        unknown = shapes - set(case.shapes())
        if unknown:
            parser.error(f"{case.name} has no shape {sorted(unknown)} "
                         f"(it has {case.shapes()})")
        profile_kernels(case, shapes)
        return
    names = set(filter(None, args.kernels.split(",")))
    unknown = names - set(by_name)
    if unknown:
        parser.error(f"unknown kernels: {sorted(unknown)}")
    cases = [c for c in CASES if not names or c.name in names]
    torch._dynamo.config.cache_size_limit = 256
    rows = []
    for run in range(1, args.runs + 1):
        rows += take_run(cases, shapes, run)
    print()
    print(summary(rows))
    if args.json:
        results.write(args.json, "derived", rows,
                      settings={"runs": args.runs, "kernels": args.kernels,
                                "shapes": args.shapes,
                                "torch": torch.__version__})


if __name__ == "__main__":
    main()
