#!/usr/bin/env python3
"""The loss alone: cross-entropy of [tokens, vocab] bf16 logits against
int64 labels (mean over the tokens, a tenth of them ignore_index), forward
+ backward (torch.autograd.grad of the logits), on the GPU machine.

Columns, each called as its users call it:
- tile: tile.ops.cross_entropy (examples/cross_entropy.mlir, its backward
  derived);
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

    python3 benchmarks/cross_entropy.py [--vocabs 32000,128256,256000]
        [--tokens 4096,16384,65536] [--columns tile,eager,compile,liger]
        [--without-liger] [--json out.json]
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
    def eager(logits, labels):
        return F.cross_entropy(logits.float(), labels, ignore_index=IGNORE)

    impls = {"tile": lambda x, y: tile.ops.cross_entropy(
        x, y, ignore_index=IGNORE),
        "eager": eager,
        "compile": torch.compile(eager, dynamic=False)}
    if "liger" in columns:
        liger = peers.liger_cross_entropy(required=with_liger)
        if liger is None:
            columns = [c for c in columns if c != "liger"]
        else:
            impls["liger"] = lambda x, y: liger(x, y, IGNORE)
    return {c: impls[c] for c in columns}


def inputs(tokens, vocab):
    g = torch.Generator("cuda").manual_seed(tokens + vocab)
    logits = torch.randn(tokens, vocab, device="cuda", generator=g,
                         dtype=torch.bfloat16).requires_grad_(True)
    labels = torch.randint(0, vocab, (tokens,), device="cuda", generator=g)
    labels[torch.rand(tokens, device="cuda", generator=g) < 0.1] = IGNORE
    return logits, labels


def cell(impl, logits, labels, iterations):
    def step(_):
        loss = impl(logits, labels)
        torch.autograd.grad(loss, logits)

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
    parser.add_argument("--columns", default="tile,eager,compile,liger")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--ceiling", type=float, default=3058.0)
    parser.add_argument("--without-liger", action="store_true")
    parser.add_argument("--json")
    options = parser.parse_args()
    impls = implementations(options.columns.split(","),
                            not options.without_liger)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__};"
          " bf16 logits, int64 labels (10 % ignored), mean; forward + "
          "backward, GPU ms behind a sleep; peak GiB above the inputs")
    print(f"{'impl':8} {'tokens':>6} {'vocab':>7} {'ms':>8} {'GB/s':>6} "
          f"{'ceil':>5} {'peak GiB':>8}")
    rows = []
    for vocab in map(int, options.vocabs.split(",")):
        for tokens in map(int, options.tokens.split(",")):
            try:
                logits, labels = inputs(tokens, vocab)
            except torch.OutOfMemoryError:
                print(f"{'inputs':8} {tokens:6d} {vocab:7d}      OOM")
                continue
            moved = 3 * 2 * tokens * vocab
            for name, impl in impls.items():
                row = {"case": f"{name} {tokens}x{vocab}", "impl": name,
                       "tokens": tokens, "vocab": vocab}
                try:
                    ms, peak = cell(impl, logits, labels, options.iterations)
                except torch.OutOfMemoryError:
                    row.update(ms=None, oom=True)
                    print(f"{name:8} {tokens:6d} {vocab:7d}      OOM",
                          flush=True)
                    torch.cuda.empty_cache()
                    rows.append(row)
                    continue
                gbps = moved / ms / 1e6
                row.update(ms=ms, gbps=gbps, of_ceiling=gbps / options.ceiling,
                           peak_gib=peak / 2**30)
                rows.append(row)
                print(f"{name:8} {tokens:6d} {vocab:7d} {ms:8.3f} "
                      f"{gbps:6.0f} {gbps / options.ceiling:5.2f} "
                      f"{peak / 2**30:8.2f}", flush=True)
            del logits, labels
            torch.cuda.empty_cache()
    if options.json:
        results.write(options.json, "cross_entropy", rows,
                      dict(vars(options), dtype="bf16",
                           torch=torch.__version__))


if __name__ == "__main__":
    main()
