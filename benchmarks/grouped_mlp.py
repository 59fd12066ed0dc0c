#!/usr/bin/env python3
"""The grouped (mixture-of-experts) SwiGLU MLP: Tile against PyTorch, one
training step each (forward + backward, weight gradients ending in fp32
main_grad), in one run on one GPU.

    python3 benchmarks/grouped_mlp.py [--experts 8 64] [--inter 1536 14336]
        [--tokens 16384 65536] [--iterations 10] [--json FILE]

H = 4096, bf16. Splits: balanced (T/E each) and skewed (expert e gets a
share ∝ 1/(e+1), rounded to 16 rows; the last experts get none). Columns:

  tile main_grad   tile.nn.GroupedSwiGLUMLP(accumulate_into_main_grad=True):
                   the weight gradients go into fp32 main_grad by the GEMMs;
                   the splits a CUDA tensor (a router's counts: read by the
                   GPU only)
  tile host splits the same with the splits as host ints
  tile untiled     the same with recompute=False: g, u and h kept from the
                   forward (as PyTorch's implementations keep them), no GEMM
                   recomputed
  tile + accum     the tiled module returning bf16 gradients to autograd, then
                   main_grad += grad (the separate accumulation the contract
                   avoids)
  grouped_mm       torch._grouped_mm (PyTorch's grouped GEMM) for the three
                   projections, silu(g) * u in torch, autograd, + accumulation
  compiled         the same under torch.compile, + accumulation
  loop             a per-expert loop of F.linear, autograd, + accumulation

Timing: each step starts behind a GPU sleep longer than the step's host
time (measured), so the host's cost is hidden for every column alike; the
GPU time between two events around the step is reported (median;
timing.gpu_times behind timing.sleep_spacer, the host's by timing.host_ms). The host
time per step is printed too: where it exceeds the GPU time the step is
host-bound and the GPU time flatters it. Memory: peak allocated during the
step minus what was allocated before it (weights, main_grad, x, dy).

--fresh-splits: a router sends each step's tokens anew, so each step here
takes new splits (each expert's count moved by up to a quarter of it, any
integer, the total kept) before it runs, inside the timed host call: the
next of 16 drawn up front, each as host ints, as device counts and as
torch._grouped_mm's device offsets (a router's counts are on the GPU
already; uploading them per step would time a host copy nobody makes).
Without it every step reuses one split.
"""

import argparse
import gc
import random
import statistics

import torch
import torch.nn.functional as F

import results
import tile
import timing

HIDDEN = 4096
DTYPE = torch.bfloat16


def split_counts(tokens, experts, kind):
    if kind == "balanced":
        base = [tokens // experts] * experts
        base[0] += tokens - sum(base)
        return base
    shares = [1.0 / (e + 1) for e in range(experts)]
    total = sum(shares)
    counts = [int(tokens * s / total) // 16 * 16 for s in shares]
    # The smallest shares round to zero: experts without tokens.
    counts[0] += tokens - sum(counts)
    return counts


class Problem:
    def __init__(self, tokens, experts, inter, splits, fresh=False):
        torch.manual_seed(0)
        self.fresh = fresh
        rng = random.Random(0)
        draws = [splits] + [self.draw(splits, rng) for _ in range(15)] \
            if fresh else [splits]
        self.pool = [(d, torch.tensor(d, device="cuda"),
                      torch.tensor(d, device="cuda").cumsum(0).to(
                          torch.int32)) for d in draws]
        self.turn = 0
        self.set_splits(0)
        self.gate_up = torch.nn.Parameter(
            torch.randn(experts, 2 * inter, HIDDEN, device="cuda",
                        dtype=DTYPE) * HIDDEN ** -0.5)
        self.down = torch.nn.Parameter(
            torch.randn(experts, HIDDEN, inter, device="cuda", dtype=DTYPE)
            * inter ** -0.5)
        for p in (self.gate_up, self.down):
            p.main_grad = torch.zeros(p.shape, device="cuda",
                                      dtype=torch.float32)
        self.x = torch.randn(tokens, HIDDEN, device="cuda",
                             dtype=DTYPE).requires_grad_()
        self.dy = torch.randn(tokens, HIDDEN, device="cuda", dtype=DTYPE)
        self.inter = inter
        # The modules share the problem's parameters (made on "meta", then
        # replaced: no second copy of the weights).
        self.tile_main_grad = tile.nn.GroupedSwiGLUMLP(
            experts, HIDDEN, inter, accumulate_into_main_grad=True,
            device="meta", dtype=DTYPE)
        self.tile_untiled = tile.nn.GroupedSwiGLUMLP(
            experts, HIDDEN, inter, accumulate_into_main_grad=True,
            recompute=False, device="meta", dtype=DTYPE)
        self.tile_plain = tile.nn.GroupedSwiGLUMLP(experts, HIDDEN, inter,
                                                   device="meta", dtype=DTYPE)
        for module in (self.tile_main_grad, self.tile_untiled,
                       self.tile_plain):
            module.gate_up_proj, module.down_proj = self.gate_up, self.down

    @staticmethod
    def draw(base, rng):
        splits = [max(0, n + rng.randint(-(n // 4), n // 4)) for n in base]
        splits[0] += sum(base) - sum(splits)
        # The first expert holds the most tokens.
        return splits if splits[0] >= 0 else list(base)

    def set_splits(self, turn):
        self.splits, self.device_splits, self.offsets = self.pool[turn]

    def route(self):
        """With --fresh-splits, the next step's splits (see the module's
        docstring)."""
        if self.fresh:
            self.turn = (self.turn + 1) % len(self.pool)
            self.set_splits(self.turn)

    def params(self):
        return (self.gate_up, self.down)

    def accumulate(self):
        """Megatron's separate accumulation: main_grad += grad, grad gone."""
        for p in self.params():
            p.main_grad.add_(p.grad)
            p.grad = None


def grouped_mm_mlp(x, gate_up, down, offsets):
    gu = torch._grouped_mm(x, gate_up.transpose(-2, -1), offs=offsets)
    g, u = gu.chunk(2, dim=-1)
    return torch._grouped_mm(F.silu(g) * u, down.transpose(-2, -1),
                             offs=offsets)


_compiled_mlp = torch.compile(grouped_mm_mlp)


def loop_mlp(x, gate_up, down, splits):
    inter = gate_up.shape[1] // 2
    outputs = []
    for e, part in enumerate(x.split(splits)):
        g = F.linear(part, gate_up[e, :inter])
        u = F.linear(part, gate_up[e, inter:])
        outputs.append(F.linear(F.silu(g) * u, down[e]))
    return torch.cat(outputs)


def steps(p):
    def tile_main_grad():
        p.route()
        p.tile_main_grad(p.x, p.device_splits).backward(p.dy)

    def tile_host_splits():
        p.route()
        p.tile_main_grad(p.x, p.splits).backward(p.dy)

    def tile_untiled():
        p.route()
        p.tile_untiled(p.x, p.device_splits).backward(p.dy)

    def tile_accumulate():
        p.route()
        p.tile_plain(p.x, p.splits).backward(p.dy)
        p.accumulate()

    def grouped_mm():
        p.route()
        grouped_mm_mlp(p.x, p.gate_up, p.down, p.offsets).backward(p.dy)
        p.accumulate()

    def compiled():
        p.route()
        _compiled_mlp(p.x, p.gate_up, p.down, p.offsets).backward(p.dy)
        p.accumulate()

    def loop():
        p.route()
        loop_mlp(p.x, p.gate_up, p.down, p.splits).backward(p.dy)
        p.accumulate()

    return {"tile main_grad": tile_main_grad,
            "tile host splits": tile_host_splits,
            "tile untiled": tile_untiled,
            "tile + accum": tile_accumulate,
            "grouped_mm": grouped_mm, "compiled": compiled, "loop": loop}


def measure(step, p, iterations, cycles_per_ms):
    """(median GPU ms, median host ms, peak extra MiB) of one step."""
    for _ in range(2):  # warm-up: compilation, plans, workspaces
        step()
    torch.cuda.synchronize()
    host = timing.host_ms(step, 3)
    host_ms = statistics.median(host)
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    step()
    torch.cuda.synchronize()
    extra_mib = (torch.cuda.max_memory_allocated() - before) / 2**20
    sleep = int(cycles_per_ms * (2 * max(host) + 1))
    gpu = timing.gpu_times(lambda _: step(), timing.sleep_spacer(sleep),
                           iterations=iterations, warmup=0)
    return statistics.median(gpu), host_ms, extra_mib, min(gpu), max(gpu)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--experts", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--inter", type=int, nargs="+", default=[1536, 14336])
    parser.add_argument("--tokens", type=int, nargs="+",
                        default=[16384, 65536])
    parser.add_argument("--splits", nargs="+",
                        default=["balanced", "skewed"])
    parser.add_argument("--columns", nargs="+")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--fresh-splits", action="store_true",
                        help="new splits every step (see above)")
    parser.add_argument("--json")
    args = parser.parse_args()
    cycles_per_ms = timing.sleep_cycles_per_ms()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}"
          f", H={HIDDEN} bf16, forward + backward into fp32 main_grad, "
          f"median of {args.iterations} steps (GPU ms; host ms per step)"
          + (", new splits every step" if args.fresh_splits else ""))
    rows = []
    for experts in args.experts:
        for inter in args.inter:
            for tokens in args.tokens:
                for kind in args.splits:
                    splits = split_counts(tokens, experts, kind)
                    label = (f"E={experts} I={inter} T={tokens} {kind}"
                             f" (empty experts: {splits.count(0)})")
                    try:
                        problem = Problem(tokens, experts, inter, splits,
                                          args.fresh_splits)
                    except torch.OutOfMemoryError:
                        print(f"{label}: skipped, the weights and main_grad "
                              "do not fit")
                        torch.cuda.empty_cache()
                        continue
                    print(label, flush=True)
                    shape = {"experts": experts, "inter": inter,
                             "tokens": tokens, "splits": kind}
                    step = None
                    for name, step in steps(problem).items():
                        if args.columns and name not in args.columns:
                            continue
                        try:
                            ms, host, mib, low, high = measure(
                                step, problem, args.iterations, cycles_per_ms)
                        except (torch.OutOfMemoryError, RuntimeError) as e:
                            print(f"  {name:15s} failed: "
                                  f"{str(e).splitlines()[0][:100]}")
                            torch.cuda.empty_cache()
                            continue
                        rows.append({
                            "case": name, **shape, "ms": ms, "host_ms": host,
                            "extra_mib": mib, "min_ms": low, "max_ms": high})
                        print(f"  {name:15s} {ms:9.3f} ms  (host {host:7.3f}"
                              f" ms, spread {low:.3f}–{high:.3f})  "
                              f"{mib:8.0f} MiB", flush=True)
                    # `step` is the last column's closure over the problem:
                    # it too must go before the next shape's tensors.
                    del problem, step
                    # The compiled column's graphs hold on to the last
                    # shape's tensors: without a reset, E = 64, I = 14336
                    # did not fit after the shape before it.
                    torch._dynamo.reset()
                    gc.collect()
                    torch.cuda.empty_cache()
    if args.json:
        results.write(args.json, "grouped_mlp", rows,
                      dict(vars(args), hidden=HIDDEN, dtype="bf16",
                           torch=torch.__version__))


if __name__ == "__main__":
    main()
