#!/usr/bin/env python3
"""Writes docs/Results.md, the page of current figures, from the results
files in docs/perf/: for each benchmark, the newest run's table with its
device, date and file. The page is generated; edit this script, not it.

    python3 benchmarks/report.py [--dir docs/perf] [--output docs/Results.md]
    python3 benchmarks/report.py --check    # exit 1 if the page is stale

Which files: every JSON file (results.read: the schema tile-benchmark/1 and
the files written before it) and the text output of the two benchmarks whose
early runs were kept as text only (tile-bench mlp's table, the compiled
main_grad lines), where no JSON file of the same name holds the run.

Which run is the newest: the date in the file's name (YYYY-MM-DD-...), else
the file's own `date`. The files of that date are shown together: the runs of
one series (names that differ only in a run number, `-1`/`-2`, `-run5`) in one
table, their figures `a / b`; each other series in a table of its own, the
newest series first. Files
from before the schema hold no time of day; where the newest date of a kind
holds several of those, LEGACY_LATEST names the ones the dated log
(docs/Performance.md) gives as that day's last word, and the page lists the
rest. Figures keep the precision the benchmark itself prints.
"""

import argparse
import os
import re
import sys

import results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERF = os.path.join(ROOT, "docs", "perf")
PAGE = os.path.join(ROOT, "docs", "Results.md")

DATED = re.compile(r"^(\d{4}-\d{2}-\d{2})-(.+)\.(json|txt)$")
RUN = re.compile(r"-(?:run)?\d+(?=-h\d{3}\w*$|$)")

# Pre-schema files of one kind on its newest date that the dated log gives
# as that day's figures, one table per list (docs/Performance.md's entries
# "RoPE as a tile kernel" and "the experts' GEMMs side by side" and "the
# grouped MLP with new splits every step"). Used only while every file named
# is of the kind's newest date.
LEGACY_LATEST = {
    "e2e": [["2026-11-23-sixth-e2e-rope-nosave-h100-run5.json",
             "2026-11-23-sixth-e2e-rope-nosave-h100-run6.json"],
            ["2026-11-23-sixth-e2e-rope-30steps-h100-run3.json",
             "2026-11-23-sixth-e2e-rope-30steps-h100-run4.json"]],
    "rope": [["2026-11-23-sixth-rope-nosave-h100.json"]],
    "grouped_mlp": [["2026-11-24-grouped-python-h200.json",
                     "2026-11-24-grouped-python-e64-h200.json"],
                    ["2026-11-24-grouped-splits-after-grouped-fresh-2-h100.json"]],
}


# Reading: every file as a tile-benchmark/1 document.

def legacy(document):
    """A pre-schema document (results.read's form: its fields in settings)
    as the benchmark's tile-benchmark/1 rows, or None if not a known form."""
    settings, rows = document["settings"], document["results"]
    first = rows[0] if rows else {}
    if "table" in settings:
        return "vs_pytorch", [dict(r, case=r["kernel"]) for r in settings["table"]]
    if "host" in settings:
        # Its operator and MLP lists are empty in the one file of this form.
        return "operators", [
            dict(r, case="rms_norm fwd+bwd host", ms=r["gpu_us"] / 1e3)
            for r in settings["host"]]
    if "ranks" in settings or "layers" in settings:
        kind = "fsdp" if "ranks" in settings else "e2e"
        return kind, [dict(r, case=r["column"]) for r in rows]
    if "tiled_ms" in first:
        return "tile-bench grouped-mlp", [
            {"case": case, "experts": r["experts"],
             "intermediate": r["intermediate"], "tokens": r["tokens"],
             "splits": "skewed" if r["skewed"] else "balanced",
             "ms": r[f"{case}_ms"] if r[f"{case}_ms"] >= 0 else None,
             "extra_mib": r[f"{case}_mib"], "skipped": r["skipped"]}
            for r in rows for case in ("tiled", "untiled")]
    if "tiled" in first:
        return "tile-bench mlp", [
            dict(r[case], case=case, sequence=r["sequence"])
            for r in rows for case in ("untiled", "tiled")]
    if "columns" in first:
        return "grouped_mlp", [
            dict(figures, case=name, experts=r["experts"], inter=r["inter"],
                 tokens=r["tokens"], splits=r["splits"])
            for r in rows for name, figures in r["columns"].items()]
    if "fwd" in first:
        return "rope", [
            dict(r[key], case=f"{r['impl']} {key}", impl=r["impl"],
                 direction=key, sequence=r["sequence"])
            for r in rows for key in ("fwd", "fwd_bwd")]
    if "gbps" in first and "kernel" in first:
        return "tile-bench", [dict(r, case=r["kernel"]) for r in rows]
    return None


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


MLP_ROW = re.compile(r"^\s*(\d+) \|\s+(\S+)\s+(\S+) \|\s+(\S+)\s+(\S+)\s+(\d+)"
                     r" \|\s+(\S+)\s+\S+$")
MAIN_GRAD_ROW = re.compile(r"^(\S+)\s+(eager|compiled)\s+median\s+(\S+) ms\s+"
                           r"min\s+(\S+)\s+peak above inputs\s+(\S+) GiB$")


def text_document(path):
    """The run in a text output of tile-bench mlp or of the compiled
    main_grad benchmark, as a document; None for any other text."""
    with open(path) as f:
        lines = f.read().splitlines()
    device = None
    if lines and lines[0].startswith("device: "):
        device = re.split(r" \(|, ", lines[0][len("device: "):])[0]
    rows, benchmark = [], None
    for line in lines:
        if m := MLP_ROW.match(line):
            benchmark = "tile-bench mlp"
            sequence = int(m.group(1))
            rows.append({"case": "untiled", "sequence": sequence,
                         "ms": number(m.group(2)),
                         "extra_mib": number(m.group(3))})
            rows.append({"case": "tiled", "sequence": sequence,
                         "ms": number(m.group(4)),
                         "extra_mib": number(m.group(5)),
                         "shards": int(m.group(6)),
                         "time_ratio": number(m.group(7))})
        elif m := MAIN_GRAD_ROW.match(line):
            benchmark = "compiled_main_grad"
            rows.append({"case": f"{m.group(1)} {m.group(2)}",
                         "module": m.group(1), "mode": m.group(2),
                         "ms": float(m.group(3)), "min_ms": float(m.group(4)),
                         "peak_gib": float(m.group(5))})
    if not rows:
        return None
    return {"schema": None, "benchmark": benchmark, "device": device,
            "date": None, "settings": {}, "results": rows}


def load(directory):
    """(name, day, document) of every results file in `directory`."""
    names = sorted(os.listdir(directory))
    stems = {name[:-len(".json")] for name in names if name.endswith(".json")}
    found = []
    for name in names:
        path = os.path.join(directory, name)
        if name.endswith(".json"):
            document = results.read(path)
            if document["schema"] is None:
                known = legacy(document)
                if known is None:
                    continue
                document = dict(document, benchmark=known[0], results=known[1])
        elif name.endswith(".txt") and name[:-len(".txt")] not in stems:
            document = text_document(path)
            if document is None:
                continue
        else:
            continue
        dated = DATED.match(name)
        day = dated.group(1) if dated else (document.get("date") or "")[:10]
        if day:
            found.append((name, day, document))
    return found


def series(name):
    """The name without its date, extension and run number."""
    dated = DATED.match(name)
    stem = dated.group(2) if dated else os.path.splitext(name)[0]
    return RUN.sub("", stem)


def current(benchmark, files):
    """The newest date of one benchmark's files, the groups of files shown
    (each a list of (name, document), one table) and the names not shown."""
    newest = max(day for _, day, _ in files)
    day = {name: document for name, d, document in files if d == newest}
    chosen = LEGACY_LATEST.get(benchmark)
    if chosen and all(name in day for group in chosen for name in group):
        groups = [[(name, day[name]) for name in group] for group in chosen]
    else:
        by_series = {}
        for name in sorted(day, key=lambda n: (day[n].get("date") or "", n)):
            by_series.setdefault(series(name), []).append((name, day[name]))
        # Newest series first: a day's last runs are its word.
        groups = sorted(by_series.values(), reverse=True,
                        key=lambda group: max(d.get("date") or ""
                                              for _, d in group))
    shown = {name for group in groups for name, _ in group}
    return newest, groups, sorted(set(day) - shown)


# Benchmarks whose rows a later file of the same day may run again: the key
# of a row. A file every row of which a newer file of that day holds is
# superseded: named, not shown.
RERUN_KEY = {"convergence": lambda row: (row["family"], row["mode"])}


def without_superseded(benchmark, groups):
    """(the groups, newest first, that hold a row no newer group holds;
    the names of the files of the others)."""
    key = RERUN_KEY.get(benchmark)
    if key is None:
        return groups, []
    kept, superseded, seen = [], [], set()
    for group in groups:
        keys = {key(r) for _, document in group for r in document["results"]}
        if keys and keys <= seen:
            superseded += [name for name, _ in group]
        else:
            kept.append(group)
        seen |= keys
    return kept, sorted(superseded)


# Tables.

def fmt(value, spec):
    return "—" if value is None else format(value, spec)


def cell(values, spec):
    """The figures of the runs that hold the case, `a / b`; one figure
    where they agree; — where none does."""
    shown = [fmt(v, spec) for v in values if v is not None]
    if not shown:
        return "—"
    return shown[0] if len(set(shown)) == 1 else " / ".join(shown)


def table(header, rows):
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def by_key(documents, key):
    """{key(row): [the row of each document, or None]} in the order the
    keys first appear."""
    keyed = {}
    for i, document in enumerate(documents):
        for row in document["results"]:
            keyed.setdefault(key(row), [None] * len(documents))[i] = row
    return keyed


def field(rows, name):
    return [row.get(name) if row else None for row in rows]


def first_seen(values):
    return list(dict.fromkeys(values))


def pivot(documents, row_key, column_key, render_cell, corner):
    """One row per row_key (a tuple), one column per column_key, in the
    order they first appear; render_cell gets a cell's rows, one a run."""
    keyed = by_key(documents, lambda r: (row_key(r), column_key(r)))
    columns = first_seen(k[1] for k in keyed)
    rows = [list(key) + [render_cell(keyed.get((key, column), []))
                         for column in columns]
            for key in first_seen(k[0] for k in keyed)]
    return table(corner + columns, rows)


def with_second(first, first_spec, second, second_spec):
    """A cell `a (b)`: a figure and, in brackets, another of the same rows."""
    def render(runs):
        if all(r is None or r.get(first) is None for r in runs):
            oom = any(r and r.get("oom") for r in runs)
            return "out of memory" if oom else "—"
        return (f"{cell(field(runs, first), first_spec)} "
                f"({cell(field(runs, second), second_spec)})")
    return render


def split_kernel(row):
    """('swiglu', 'fwd') of a row's kernel 'swiglu fwd'."""
    kernel, _, direction = row["kernel"].rpartition(" ")
    return (kernel, direction) if direction in ("fwd", "bwd") else (row["kernel"], "")


def operators_table(documents):
    ceilings = [r for document in documents for r in document["results"]
                if r["kernel"].startswith("ceiling")]
    kernels = [dict(document, results=[r for r in document["results"]
                                       if not r["kernel"].startswith("ceiling")])
               for document in documents]
    note = ("GB/s (÷ the ceiling). The ceiling, the stream kernel's 2 reads and "
            f"1 write: {cell(field(ceilings, 'gbps'), '.0f')} GB/s.")
    return [note, ""] + pivot(
        kernels, lambda r: (split_kernel(r)[0], r["shape"]),
        lambda r: f"{r['dtype']} {split_kernel(r)[1]}".strip(),
        with_second("gbps", ".0f", "ceiling_ratio", ".2f"), ["kernel", "shape"])


def ms_or_skipped(runs):
    """The runs' ms, or why the step did not run where none did."""
    skipped = [r.get("skipped") for r in runs if r and r.get("ms") is None]
    if skipped and skipped[0] and all(r is None or r.get("ms") is None for r in runs):
        return skipped[0]
    return cell(field(runs, "ms"), ".2f")


def mlp_table(documents):
    keyed = by_key(documents, lambda r: (r["sequence"], r["case"]))
    rows = []
    for sequence in sorted(first_seen(k[0] for k in keyed)):
        untiled = keyed.get((sequence, "untiled"), [None] * len(documents))
        tiled = keyed.get((sequence, "tiled"), [None] * len(documents))
        ratios = []
        for u, t in zip(untiled, tiled):
            if t and t.get("time_ratio") is not None:
                ratios.append(t["time_ratio"])
            elif u and t and u.get("ms") and t.get("ms"):
                ratios.append(t["ms"] / u["ms"])
            else:
                ratios.append(None)
        rows.append([sequence, ms_or_skipped(untiled),
                     cell(field(untiled, "extra_mib"), ".0f"),
                     ms_or_skipped(tiled),
                     cell(field(tiled, "extra_mib"), ".0f"),
                     cell(field(tiled, "shards"), "d"), cell(ratios, ".3f")])
    return table(["sequence", "untiled ms", "untiled MiB", "tiled ms",
                  "tiled MiB", "shards", "tiled ÷ untiled"], rows)


def shape_key(row, inter="inter"):
    return (row["experts"], row[inter], row["tokens"], row["splits"])


def grouped_bench_table(documents):
    keyed = by_key(documents, lambda r: (shape_key(r, "intermediate"), r["case"]))
    rows = []
    for shape in first_seen(k[0] for k in keyed):
        row = list(shape)
        for case in ("untiled", "tiled"):
            runs = keyed.get((shape, case), [])
            row += [ms_or_skipped(runs), cell(field(runs, "extra_mib"), ".0f")]
        rows.append(row)
    return table(["E", "I", "T", "splits", "untiled ms", "untiled MiB",
                  "tiled ms", "tiled MiB"], rows)


def runs_of(rows, name):
    """Every run's figure of a per-run list field, over the documents."""
    return [v for row in rows if row and row.get(name) for v in row[name]]


def vs_pytorch_cell(runs):
    best = cell(runs_of(runs, "tile_over_best_peer"), ".2f")
    in_place = runs_of(runs, "in_place_over_liger")
    return f"{best} [{cell(in_place, '.2f')}]" if in_place else best


def vs_pytorch_table(documents):
    return pivot(documents, lambda r: (split_kernel(r)[0], r["shape"]),
                 lambda r: f"{r['dtype']} {split_kernel(r)[1]}".strip(),
                 vs_pytorch_cell, ["kernel", "shape"])


def host_table(documents):
    keyed = by_key(documents, lambda r: (r["case"], r.get("impl") or r.get("kernel")
                                         or r["case"], r.get("shape") or r.get("sequence")))
    host, through = [], []
    for (case, impl, shape), runs in keyed.items():
        if case == "rms_norm fwd+bwd host":
            quartiles = [" / ".join(format(v, ".1f") for v in r["host_us"])
                         if r else None for r in runs]
            host.append([impl, cell(quartiles, "s"),
                         cell(field(runs, "gpu_us"), ".1f"),
                         cell(field(runs, "forward_host_us"), ".1f")])
        else:
            unit, scale = ("ms", 1) if case == "tiled mlp step" else ("µs", 1e3)
            python = [r["python_ms"] * scale if r else None for r in runs]
            bench = [r["tile_bench_ms"] * scale if r and r.get("tile_bench_ms")
                     else None for r in runs]
            through.append([impl, shape] + [
                "—" if c == "—" else f"{c} {unit}"
                for c in (cell(python, ".2f"), cell(bench, ".2f"))])
    lines = []
    if host:
        lines += ["RMSNorm forward + backward, 4096 × 1024 bf16, per step: "
                  "the host's time (25 % / median / 75 % of the rounds) and "
                  "the GPU's.", ""]
        lines += table(["implementation", "host µs", "GPU µs",
                        "forward-only host µs"], host)
    if through:
        lines += ([""] if lines else []) + table(
            ["case", "shape", "through Python", "tile-bench"], through)
    return lines


def rope_table(documents):
    """Per family (files before GLM-4's were Llama's alone), sequence and
    direction: each implementation's ms (GB/s)."""
    return pivot(documents, lambda r: (r.get("family", "llama"), r["sequence"],
                                       r["direction"].replace("_", "+")),
                 lambda r: r["impl"], with_second("ms", ".3f", "gbps", ".0f"),
                 ["family", "sequence", "direction"])


def fused_mlp_table(documents):
    return pivot(documents, lambda r: (r["model"], r["tokens"]),
                 lambda r: r["impl"], with_second("ms", ".2f", "peak_gib", ".2f"),
                 ["model", "tokens"])


def grouped_table(documents):
    return pivot(documents, shape_key, lambda r: r["case"],
                 with_second("ms", ".3f", "host_ms", ".3f"),
                 ["E", "I", "T", "splits"])


def main_grad_table(documents):
    keyed = by_key(documents, lambda r: (r["module"], r["mode"]))
    rows = [[module, mode, cell(field(runs, "ms"), ".3f"),
             cell(field(runs, "min_ms"), ".3f"), cell(field(runs, "peak_gib"), ".3f")]
            for (module, mode), runs in keyed.items()]
    return table(["module", "mode", "median ms", "min ms",
                  "peak above inputs, GiB"], rows)


def e2e_table(documents):
    return pivot(documents, lambda r: (r["sequence"],), lambda r: r["column"],
                 with_second("tokens_per_s", ".0f", "peak_gib", ".2f"),
                 ["sequence"])


def cross_entropy_table(documents):
    return pivot(documents, lambda r: (r["tokens"], r["vocab"]),
                 lambda r: r["impl"],
                 with_second("ms", ".3f", "peak_gib", ".2f"),
                 ["tokens", "vocab"])


def causal_lm_table(documents):
    """One document holds every run (a row's "run"): a run per document
    here, so that a cell shows each run's figure."""
    runs = [{"results": [r for r in d["results"] if r.get("run") == k]}
            for d in documents
            for k in sorted({r.get("run") for r in d["results"]})]
    return pivot(runs, lambda r: (r["tokens"],), lambda r: r["column"],
                 with_second("tokens_per_s", ".0f", "peak_gib", ".2f"),
                 ["tokens"])


def causal_lm_moe_table(documents):
    """causal_lm_table with the model in each row (one file may hold one
    model, a day several)."""
    runs = [{"results": [r for r in d["results"] if r.get("run") == k]}
            for d in documents
            for k in sorted({r.get("run") for r in d["results"]})]
    return pivot(runs, lambda r: (r["model"], r["tokens"]),
                 lambda r: r["column"],
                 with_second("tokens_per_s", ".0f", "peak_gib", ".2f"),
                 ["model", "tokens"])


def convergence_table(documents):
    """A row per family and mode: the loss at steps 1 and 30, the
    distances (bf16 modes: the unpatched run's in brackets) and whether
    they are within the bounds."""
    def distance(row, key):
        text = f"{row[key]:.1e}"
        reference = row.get("unpatched")
        return text + (f" ({reference[key]:.1e})" if reference else "")
    rows = []
    for document in documents:
        for r in document["results"]:
            rows.append([r["family"], r["mode"],
                         f"{r['first_loss']:.3f} → {r['last_loss']:.3f}",
                         distance(r, "loss"), distance(r, "logprob"),
                         distance(r, "param"),
                         "yes" if r["within"] else "**no**"])
    return table(["family", "mode", "loss, steps 1 → 30", "loss",
                  "top-20 log-prob", "parameter", "within"], rows)


def derived_table(documents):
    """Per kernel and shape: Tile's and torch.compile's ms, compile / Tile
    and Tile's share of the copy ceiling, each run's figure `a / b` (a file
    holds its runs as rows with a run number)."""
    keyed = by_key(documents, lambda r: (r["kernel"], r["shape"]))
    rows = []
    for kernel, shape in keyed:
        runs = [r for document in documents for r in document["results"]
                if (r["kernel"], r["shape"]) == (kernel, shape)]
        rows.append([
            kernel, shape,
            cell([r["ms"]["tile"] for r in runs], ".4f"),
            cell([r["ms"]["compile"] for r in runs], ".4f"),
            cell([r["ms"]["compile"] / r["ms"]["tile"] for r in runs], ".2f"),
            cell([r["bytes"] / (r["ms"]["tile"] * 1e6) / r["ceiling_gbps"]
                  for r in runs], ".2f")])
    return table(["kernel", "shape", "Tile ms", "compile ms",
                  "compile / Tile", "Tile of ceiling"], rows)


def fsdp_table(documents):
    return pivot(documents, lambda r: (r["sequence"],), lambda r: r["column"],
                 with_second("ms", ".1f", "peak_gib", ".2f"), ["sequence"])


# Each benchmark on the page, in order: its title, what it measures and its
# table.
KINDS = [
    ("tile-bench", "Operators: `tile-bench`",
     "Each operator's GB/s (device time, median) and its ratio to the "
     "streaming ceiling measured in the same run.", operators_table),
    ("vs_pytorch", "Operators next to PyTorch: `benchmarks/vs_pytorch.py`",
     "Every side called through Python, its host cost hidden: Tile's GB/s "
     "over the best of eager, torch.compile and Liger, per run; in brackets, "
     "where measured, `tile.ops.swiglu(..., inplace_backward=True)` over "
     "Liger, both writing their gradients over their inputs.",
     vs_pytorch_table),
    ("operators", "The Python layer: `benchmarks/operators.py`",
     "Host and GPU time per call through `tile.ops`, next to the peers and "
     "to tile-bench.", host_table),
    ("rope", "RoPE: `benchmarks/rope.py`",
     "RoPE on Llama-3-8B's q and k (bf16) and GLM-4-9B's (interleaved "
     "pairs, half of each head rotated), GPU time behind a sleep: ms "
     "(GB/s).",
     rope_table),
    ("fused_mlp", "The MLP of a fused gate_up projection: "
     "`benchmarks/fused_mlp.py`",
     "Phi-3-mini's and GLM-4-9B's MLP (bf16, forward + backward), the "
     "model's own, Liger's and Tile's (default, tiled, tiled of split "
     "weights), GPU time behind a sleep: ms (peak GiB above the inputs).",
     fused_mlp_table),
    ("tile-bench mlp", "Tiled SwiGLU MLP: `tile-bench mlp`",
     "One training step (forward + backward) of the SwiGLU MLP, H = 4096, "
     "I = 12288, bf16: tiled (automatic shards) against untiled, time and "
     "extra memory.", mlp_table),
    ("tile-bench grouped-mlp", "Grouped (MoE) MLP: `tile-bench grouped-mlp`",
     "One training step of the grouped SwiGLU MLP, H = 4096, bf16, E experts "
     "of intermediate size I over T tokens: ms and extra MiB.",
     grouped_bench_table),
    ("grouped_mlp", "Grouped MLP next to PyTorch: `benchmarks/grouped_mlp.py`",
     "One training step into fp32 main_grad, H = 4096, bf16, each column "
     "through Python: GPU ms (host ms per step).", grouped_table),
    ("compiled_main_grad", "main_grad under torch.compile: "
     "`benchmarks/compiled_main_grad.py`",
     "One step of one module, eager and compiled, main_grads attached.",
     main_grad_table),
    ("e2e", "Whole layers: `benchmarks/e2e.py`",
     "A training step of Llama-3-8B layers (bf16, batch 1), patched by Tile "
     "or Liger or not: tokens/s of the median step (peak GiB).", e2e_table),
    ("cross_entropy", "The loss: `benchmarks/cross_entropy.py`",
     "Cross-entropy of bf16 logits against int64 labels (a tenth ignored), "
     "mean, forward + backward, GPU time behind a sleep: ms (peak GiB above "
     "the inputs). Liger writes the gradient over the logits.",
     cross_entropy_table),
    ("causal_lm", "The whole causal-LM step: `benchmarks/causal_lm.py`",
     "LlamaForCausalLM at Llama-3-8B shapes, 2 layers, LM head and loss "
     "included (bf16, batch 1), unpatched, Tile, Liger's default and Liger "
     "with its cross-entropy only: tokens/s over the timed steps, wall "
     "clock (peak GiB), each run.", causal_lm_table),
    ("causal_lm_moe", "The whole mixture-of-experts step: "
     "`benchmarks/causal_lm.py --model qwen3-moe|deepseek-v3`",
     "Qwen3-MoE and a DeepSeek-V3-shaped model, 2 layers, LM head, loss and "
     "the router's auxiliary loss included (bf16, batch 1, a new batch each "
     "step), unpatched, Tile, Liger's default and Liger with its "
     "cross-entropy only: tokens/s over the timed steps, wall clock (peak "
     "GiB), each run.", causal_lm_moe_table),
    ("linear_cross_entropy", "The LM head and the loss: "
     "`benchmarks/cross_entropy.py --hidden`",
     "bf16 hidden [tokens, H] and weight [vocab, H] in, the mean loss (a "
     "tenth ignored) and both gradients out, GPU time behind a sleep: ms "
     "(peak GiB above the inputs).", cross_entropy_table),
    ("convergence", "Convergence: `benchmarks/convergence.py`",
     "A 2-layer mini model of each family apply_tile supports, 30 AdamW "
     "steps patched and unpatched from the same weights on the same "
     "batches. Distances: fp32, patched against unpatched (the largest "
     "relative step loss, top-20 log-prob and parameter differences); bf16 "
     "modes, each run against the fp32 run, the unpatched run's in "
     "brackets. Within: fp32 under fixed bounds, bf16 under twice the "
     "unpatched distance plus a floor; where one run of each side misses, "
     "the median of five patched runs against the farthest of five "
     "unpatched ones, their weights a rounding apart (the script says "
     "which). Files newest first: a family and mode run again appears "
     "again below, its first row is its word; a file every row of which a "
     "later one ran again is named, not shown.",
     convergence_table),
    ("derived", "Derived kernels next to torch.compile: "
     "`benchmarks/derived.py`",
     "Every Zoo and example kernel as a training step (forward, then "
     "torch.autograd.grad) through tile.Kernel against torch.compile of the "
     "same PyTorch function, per shape, GPU time behind queued kernels: ms, "
     "compile / Tile (> 1: Tile faster) and Tile's GB/s over a copy of as "
     "many bytes.", derived_table),
    ("fsdp", "FSDP2: `benchmarks/fsdp.py`",
     "The same layers under FSDP2 with the tiled MLPs: median step ms (peak "
     "GiB per rank).", fsdp_table),
    ("zero3", "DeepSpeed ZeRO-3: `benchmarks/zero3.py`",
     "The same layers under DeepSpeed ZeRO-3 (bf16, its fp32 master "
     "weights, a step of forward, backward and optimizer step) with the MLP "
     "as it is, Tile's tiled MLP and DeepSpeed's TiledMLP: median step ms "
     "(peak GiB per rank). Liger's tiled MLP (0.8.5) stops the step under "
     "ZeRO-3: DeepSpeed's gradient reduction meets a parameter's gradient "
     "more than once in one bucket (the run's text beside the files).",
     fsdp_table),
]


# The page.

def link(name, directory, page_dir):
    return f"[{name}]({os.path.relpath(os.path.join(directory, name), page_dir)})"


def source(group, directory, page_dir):
    """Where a table's figures come from: its files, devices, date."""
    names = ", ".join(link(name, directory, page_dir) for name, _ in group)
    devices = first_seen(document.get("device") or "device not in the file"
                         for _, document in group)
    settings = group[0][1].get("settings") or {}
    extra = [f"{settings['ranks']} ranks"] if "ranks" in settings else []
    runs = " (`a / b`: their figures in this order)" if len(group) > 1 else ""
    return f"From {names}{runs}; {', '.join(devices + extra)}."


def section(benchmark, title, about, render, files, directory, page_dir):
    newest, groups, others = current(benchmark, files)
    groups, superseded = without_superseded(benchmark, groups)
    lines = [f"## {title}", "", f"{about} Newest run: {newest}.", ""]
    for group in groups:
        lines += [source(group, directory, page_dir), ""]
        lines += render([document for _, document in group]) + [""]
    if others:
        lines += [f"Also of {newest}, earlier per the dated log: "
                  + ", ".join(f"`{name}`" for name in others) + ".", ""]
    if superseded:
        lines += [f"Also of {newest}, every row of which a later file above "
                  "ran again: " + ", ".join(f"`{name}`" for name in superseded)
                  + ".", ""]
    return lines


HEADER = """# Current results

Generated by `python3 benchmarks/report.py` from the results files in
[perf/](perf/): do not edit by hand (`python3 benchmarks/report.py` rewrites
it; `python/tests/test_results_page.py` fails while it is stale).

For each benchmark, the newest run: its table, device, date and file. How
each one measures: [benchmarks/README.md](../benchmarks/README.md). What
each optimization predicted and gave, dated, and every earlier run:
[Performance.md](Performance.md). Figures are as each benchmark prints them;
`a / b` are the runs of one series (one figure where they agree).
"""


def render(directory=PERF, page_dir=None):
    """The page for the results files in `directory`, its links relative to
    `page_dir` (default: where docs/Results.md is)."""
    page_dir = page_dir or os.path.dirname(PAGE)
    files = load(directory)
    lines = HEADER.splitlines() + [""]
    known = set()
    for benchmark, title, about, render_table in KINDS:
        known.add(benchmark)
        mine = [f for f in files if f[2]["benchmark"] == benchmark]
        if mine:
            lines += section(benchmark, title, about, render_table, mine,
                             directory, page_dir)
    others = sorted({f[2]["benchmark"] for f in files} - known)
    if others:
        lines += ["## Other results", "",
                  "Benchmarks this page has no table for yet: "
                  + ", ".join(f"`{b}`" for b in others) + ".", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=PERF, help="the results files")
    parser.add_argument("--output", default=PAGE, help="the page to write")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if --output differs")
    options = parser.parse_args()
    page = render(options.dir, os.path.dirname(os.path.abspath(options.output)))
    if options.check:
        with open(options.output) as f:
            stale = f.read() != page
        if stale:
            print(f"{options.output} is stale: run python3 benchmarks/report.py",
                  file=sys.stderr)
        return 1 if stale else 0
    with open(options.output, "w") as f:
        f.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
