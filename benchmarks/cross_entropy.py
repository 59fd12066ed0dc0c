#!/usr/bin/env python3
"""The loss alone: cross-entropy of [tokens, vocab] bf16 logits against
int64 labels (mean over the tokens, a tenth of them ignore_index), forward
+ backward (torch.autograd.grad of the logits), on the GPU machine.

Columns, each called as its users call it:
- tile: tile.ops.cross_entropy (examples/cross_entropy.mlir, its backward
  derived); tile-inplace: with inplace_backward=True (the gradient written
  over the logits, as Liger's);
- eager, compile: F.cross_entropy(logits.float(), labels), Hugging Face's
  loss (the fp32 upcast is theirs), eagerly and under torch.compile;
- liger: Liger's LigerCrossEntropyFunction (carry its wheel; unpack it onto
  PYTHONPATH). It computes the gradient in its forward and writes it over
  the logits, so it allocates no gradient: the reason for its memory.

Each cell: GPU ms behind a sleep (the host's cost hidden; the median of
--iterations), the peak memory the call allocated above its inputs, and
GB/s of the bytes a fused pair must move: the logits read forward, read and
the gradient written backward (3 × 2 bytes per element), with its ratio to
--ceiling (the stream ceiling tile-bench measured on the same GPU: 3058
GB/s on the H100 of 2026-11-25). A cell that runs out of memory says OOM.

With --hidden H, the LM head and the loss together (the benchmark
"linear_cross_entropy"): bf16 hidden [tokens, H] and weight [vocab, H] in,
both gradients out, no GB/s (the step is GEMMs). Columns: tile-linear
(tile.ops.linear_cross_entropy), compile-linear (torch.compile of
F.cross_entropy((hidden @ weight.T).float(), labels)) and liger-linear
(Liger's LigerFusedLinearCrossEntropyFunction, its defaults).

    python3 benchmarks/cross_entropy.py [--vocabs 32000,128256,256000]
        [--tokens 4096,16384,65536] [--columns tile,eager,compile,liger]
        [--hidden 4096] [--without-liger] [--json out.json]
"""

import argparse

import torch
import torch.nn.functional as F

import peers
import results
import tile
import timing

IGNORE = -100


def implementations(columns, with_liger):
    """{column: fn(*differentiated inputs, labels) -> the mean loss}."""
    def eager(logits, labels):
        return F.cross_entropy(logits.float(), labels, ignore_index=IGNORE)

    def eager_linear(hidden, weight, labels):
        return eager(hidden @ weight.T, labels)

    impls = {"tile": lambda x, y: tile.ops.cross_entropy(
        x, y, ignore_index=IGNORE),
        "tile-inplace": lambda x, y: tile.ops.cross_entropy(
            x, y, ignore_index=IGNORE, inplace_backward=True),
        "eager": eager,
        "compile": torch.compile(eager, dynamic=False),
        "tile-linear": lambda h, w, y: tile.ops.linear_cross_entropy(
            h, w, y, ignore_index=IGNORE),
        "compile-linear": torch.compile(eager_linear, dynamic=False)}
    if "liger" in columns:
        liger = peers.liger_cross_entropy(required=with_liger)
        if liger is None:
            columns = [c for c in columns if c != "liger"]
        else:
            impls["liger"] = lambda x, y: liger(x, y, IGNORE)
    if "liger-linear" in columns:
        liger = peers.liger_fused_linear_cross_entropy(required=with_liger)
        if liger is None:
            columns = [c for c in columns if c != "liger-linear"]
        else:
            impls["liger-linear"] = lambda h, w, y: liger(h, w, y, IGNORE)
    return {c: impls[c] for c in columns}


def inputs(tokens, vocab, hidden=0):
    """(the differentiated inputs, labels): logits [tokens, vocab], or with
    `hidden` the LM head's input [tokens, hidden] and weight [vocab,
    hidden] (scaled as an initialized head's)."""
    g = torch.Generator("cuda").manual_seed(tokens + vocab)
    if hidden:
        h = torch.randn(tokens, hidden, device="cuda", generator=g,
                        dtype=torch.bfloat16).requires_grad_(True)
        w = (torch.randn(vocab, hidden, device="cuda", generator=g,
                         dtype=torch.bfloat16) * hidden ** -0.5
             ).requires_grad_(True)
        tensors = (h, w)
    else:
        tensors = (torch.randn(tokens, vocab, device="cuda", generator=g,
                               dtype=torch.bfloat16).requires_grad_(True),)
    labels = torch.randint(0, vocab, (tokens,), device="cuda", generator=g)
    labels[torch.rand(tokens, device="cuda", generator=g) < 0.1] = IGNORE
    return tensors, labels


def cell(impl, tensors, labels, iterations):
    def step(_):
        loss = impl(*tensors, labels)
        torch.autograd.grad(loss, tensors)

    step(0)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    step(0)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    ms = timing.gpu_ms(step, timing.sleep_spacer(6.4e6),
                       iterations=iterations, warmup=2)
    return ms, peak


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vocabs", default="32000,128256,256000")
    parser.add_argument("--tokens", default="4096,16384,65536")
    parser.add_argument("--columns", default=None,
                        help="default: tile,tile-inplace,eager,compile,liger;"
                        " with --hidden tile-linear,compile-linear,"
                        "liger-linear")
    parser.add_argument("--hidden", type=int, default=0,
                        help="the LM head and the loss together: hidden "
                        "[tokens, H] and weight [vocab, H] in, their "
                        "gradients out")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--ceiling", type=float, default=3058.0)
    parser.add_argument("--without-liger", action="store_true")
    parser.add_argument("--json")
    options = parser.parse_args()
    linear = ("tile-linear", "compile-linear", "liger-linear")
    columns = (options.columns or (",".join(linear) if options.hidden else
                                   "tile,tile-inplace,eager,compile,liger")
               ).split(",")
    if any((c in linear) != bool(options.hidden) for c in columns):
        parser.error(f"the columns {', '.join(linear)} take --hidden, the "
                     "others do not")
    impls = implementations(columns, not options.without_liger)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__};"
          " bf16 logits, int64 labels (10 % ignored), mean; forward + "
          "backward, GPU ms behind a sleep; peak GiB above the inputs")
    print(f"{'impl':8} {'tokens':>6} {'vocab':>7} {'ms':>8} {'GB/s':>6} "
          f"{'ceil':>5} {'peak GiB':>8}")
    rows = []
    for vocab in map(int, options.vocabs.split(",")):
        for tokens in map(int, options.tokens.split(",")):
            try:
                tensors, labels = inputs(tokens, vocab, options.hidden)
            except torch.OutOfMemoryError:
                print(f"{'inputs':8} {tokens:6d} {vocab:7d}      OOM")
                continue
            # The logits' bytes a fused loss must move; with --hidden the
            # step is GEMMs: no GB/s.
            moved = 0 if options.hidden else 3 * 2 * tokens * vocab
            for name, impl in impls.items():
                row = {"case": f"{name} {tokens}x{vocab}", "impl": name,
                       "tokens": tokens, "vocab": vocab}
                try:
                    ms, peak = cell(impl, tensors, labels, options.iterations)
                except torch.OutOfMemoryError:
                    row.update(ms=None, oom=True)
                    print(f"{name:8} {tokens:6d} {vocab:7d}      OOM",
                          flush=True)
                    torch.cuda.empty_cache()
                    rows.append(row)
                    continue
                gbps = moved / ms / 1e6
                row.update(ms=ms, peak_gib=peak / 2**30)
                if moved:
                    row.update(gbps=gbps, of_ceiling=gbps / options.ceiling)
                rows.append(row)
                print(f"{name:8} {tokens:6d} {vocab:7d} {ms:8.3f} "
                      f"{gbps:6.0f} {gbps / options.ceiling:5.2f} "
                      f"{peak / 2**30:8.2f}", flush=True)
            del tensors, labels
            torch.cuda.empty_cache()
    if options.json:
        results.write(options.json,
                      "linear_cross_entropy" if options.hidden
                      else "cross_entropy", rows,
                      dict(vars(options), dtype="bf16",
                           torch=torch.__version__))


if __name__ == "__main__":
    main()
