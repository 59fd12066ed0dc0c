#!/usr/bin/env python3
"""Plots benchmarks/fsdp.py's JSON: step time and peak memory per GPU of
each column against the sequence, each as a ratio to the regular MLP's.

    python3 benchmarks/plot_fsdp.py fsdp2.json --out plot.png
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
    parser.add_argument("run")
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    data = results.read(options.run, "fsdp")
    settings = data["settings"]
    rows = data["results"]
    regular = {r["sequence"]: r for r in rows if r["column"] == "regular"}
    columns = sorted({r["column"] for r in rows} - {"regular"})
    plt = pyplot()
    figure, (time_axis, memory_axis) = plt.subplots(1, 2, figsize=(10, 4))
    for column in columns:
        mine = sorted((r for r in rows if r["column"] == column),
                      key=lambda r: r["sequence"])
        sequences = [r["sequence"] for r in mine]
        time_axis.plot(sequences, [r["ms"] / regular[r["sequence"]]["ms"]
                                   for r in mine], marker="o", label=column)
        memory_axis.plot(sequences,
                         [r["peak_gib"] / regular[r["sequence"]]["peak_gib"]
                          for r in mine], marker="o", label=column)
    for axis, title in ((time_axis, "step time ÷ regular MLP"),
                        (memory_axis, "peak memory per GPU ÷ regular MLP")):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("sequence (tokens)")
        axis.set_title(title)
        axis.axhline(1.0, color="grey", linewidth=0.8)
        axis.legend()
    figure.suptitle(f"FSDP2, {settings['ranks']} × {data['device']}, "
                    f"{settings['layers']} Llama layers (H 4096, I 12288), bf16")
    figure.tight_layout()
    figure.savefig(options.out, dpi=110)


if __name__ == "__main__":
    main()
