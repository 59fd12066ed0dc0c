#!/usr/bin/env python3
"""Plots benchmarks/causal_lm.py's mixture-of-experts runs (--model
qwen3-moe or deepseek-v3): tokens/s and peak memory of each model's columns
against the tokens, one line per model and column (the mean of its runs, the
bars their range). Files of one model and column are pooled.

    python3 benchmarks/plot_moe.py q.json d.json --out moe-step.png
"""

import argparse
import collections

import results
from plot_fsdp import pyplot


def series(paths):
    """{(model, column): {tokens: [(tokens/s, peak GiB) of each run]}}."""
    pooled = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in paths:
        for r in results.read(path, "causal_lm_moe")["results"]:
            if r.get("oom"):  # out of memory: no figures
                continue
            pooled[r["model"], r["column"]][r["tokens"]].append(
                (r["tokens_per_s"] / 1e3, r["peak_gib"]))
    return pooled


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    plt = pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for (model, column), by_tokens in sorted(series(options.runs).items()):
        tokens = sorted(by_tokens)
        style = dict(marker="o", capsize=3, label=f"{model}, {column}",
                     linestyle="-" if column == "tile" else "--")
        for axis, index in zip(axes, (0, 1)):
            values = [[run[index] for run in by_tokens[t]] for t in tokens]
            means = [sum(v) / len(v) for v in values]
            spread = [[m - min(v) for m, v in zip(means, values)],
                      [max(v) - m for m, v in zip(means, values)]]
            axis.errorbar(tokens, means, yerr=spread, **style)
    for axis, title in zip(axes, ("k tokens/s (higher is better)",
                                  "peak GiB (lower is better)")):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("tokens (batch 1)")
        axis.set_title(title)
        axis.legend(fontsize=8)
    figure.suptitle("The whole MoE training step, 2 layers, bf16, one H200: "
                    "apply_tile against Liger's patch")
    figure.tight_layout()
    figure.savefig(options.out, dpi=110)


if __name__ == "__main__":
    main()
