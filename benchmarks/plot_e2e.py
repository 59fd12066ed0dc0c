#!/usr/bin/env python3
"""Plots the JSON of benchmarks/e2e.py (the decoder layers) or
benchmarks/causal_lm.py (the whole causal-LM step), one or more runs:
tokens/s and peak memory per column and sequence, runs averaged (a file
may hold several), their spread as error bars.

    python3 benchmarks/plot_e2e.py run1.json [run2.json ...] --out plot.png
"""

import argparse

import results


def pyplot():
    """matplotlib's pyplot, drawing to files (no display)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    figures = {}  # (column, sequence) -> [(tokens/s, peak GiB)]
    device = layers = None
    titles = {"e2e": "Llama-3-8B decoder layers",
              "causal_lm": "Llama-3-8B decoder layers + LM head and loss"}
    for path in options.runs:
        data = results.read(path)
        benchmark = data["benchmark"] or "e2e"  # records before the schema
        if benchmark not in titles:
            raise SystemExit(f"{path}: a {benchmark} benchmark, not one of "
                             f"{', '.join(titles)}")
        device, layers = data["device"], data["settings"]["layers"]
        for r in data["results"]:
            if not r.get("oom"):
                sequence = r.get("sequence", r.get("tokens"))
                figures.setdefault((r["column"], sequence), []).append(
                    (r["tokens_per_s"], r["peak_gib"]))
    columns = list(dict.fromkeys(c for c, _ in figures))
    sequences = sorted({s for _, s in figures})
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    width = 0.8 / len(columns)
    for metric, axis, label in ((0, axes[0], "tokens / s"),
                                (1, axes[1], "peak memory (GiB)")):
        for i, column in enumerate(columns):
            xs, means, below, above = [], [], [], []
            for j, sequence in enumerate(sequences):
                values = [v[metric] for v in figures.get((column, sequence),
                                                         [])]
                if not values:
                    continue
                mean = sum(values) / len(values)
                xs.append(j + (i - (len(columns) - 1) / 2) * width)
                means.append(mean)
                below.append(mean - min(values))
                above.append(max(values) - mean)
            axis.bar(xs, means, width, label=column, yerr=[below, above],
                     capsize=2)
        axis.set_xticks(range(len(sequences)))
        axis.set_xticklabels([str(s) for s in sequences])
        axis.set_xlabel("sequence (tokens, batch 1)")
        axis.set_ylabel(label)
    axes[0].legend(fontsize=8)
    runs = max(len(v) for v in figures.values())
    fig.suptitle(f"{layers} {titles[benchmark]}, bf16, forward + backward "
                 f"({device}; {runs} runs)")
    fig.tight_layout()
    fig.savefig(options.out, dpi=110)


if __name__ == "__main__":
    main()
