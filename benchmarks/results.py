"""The one JSON form of every benchmark's results (benchmarks/README.md,
"Results"), written by write() and read back by read(); tile-bench (C++,
tools/tile-bench/BenchTool.cpp) writes the same envelope.

    {"schema": "tile-benchmark/1", "benchmark": "e2e",
     "device": "NVIDIA H100 80GB HBM3", "date": "2026-11-25T10:00:00+00:00",
     "git": "<revision>" or null, "command": ["benchmarks/e2e.py", ...],
     "settings": {...}, "results": [{"case": "tile", ..., "ms": 12.3}, ...],
     "extra": {...}}
"""

import datetime
import json
import os
import subprocess
import sys

SCHEMA = "tile-benchmark/1"
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def git_revision(directory=_ROOT):
    """The checkout's revision as the tools' --version gives theirs (git
    describe --always --dirty --abbrev=12), or None outside a checkout.
    TILE_GIT_REVISION, where set, is taken instead: a copy of the tree
    whose .git is not its own (the GPU machine's carries the session's
    base commit) says which revision it is."""
    given = os.environ.get("TILE_GIT_REVISION")
    if given:
        return given
    try:
        out = subprocess.run(["git", "-C", directory, "describe", "--always",
                              "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    revision = out.stdout.strip()
    return revision if out.returncode == 0 and revision else None


def envelope(benchmark, results, settings=None, extra=None, device=None):
    """The document for `results` (rows, each with a "case"): the device
    (default: torch's current CUDA device), the date, the revision, the
    command line and the settings around them."""
    for row in results:
        if "case" not in row:
            raise ValueError(f"{benchmark}: a result row without a case: {row}")
    if device is None:
        import torch
        device = torch.cuda.get_device_name()
    document = {
        "schema": SCHEMA, "benchmark": benchmark, "device": device,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "git": git_revision(), "command": list(sys.argv),
        "settings": dict(settings or {}), "results": list(results)}
    if extra:
        document["extra"] = dict(extra)
    return document


def write(path, benchmark, results, settings=None, extra=None, device=None):
    """Writes envelope(...) to `path` as JSON."""
    document = envelope(benchmark, results, settings, extra, device)
    with open(path, "w") as f:
        json.dump(document, f, indent=1)
        f.write("\n")


def read(path, benchmark=None):
    """The document at `path`. One written before tile-benchmark/1 (the
    dated records in docs/perf/) is read as one: its top-level fields other
    than device and results become its settings. With `benchmark`, a
    document of another benchmark is an error."""
    with open(path) as f:
        document = json.load(f)
    if "schema" not in document:
        document = {"schema": None, "benchmark": None,
                    "device": document.get("device"), "date": None,
                    "git": None, "command": None,
                    "settings": {k: v for k, v in document.items()
                                 if k not in ("device", "results")},
                    "results": document.get("results", [])}
    elif document["schema"] != SCHEMA:
        raise ValueError(f"{path}: schema {document['schema']!r}, "
                         f"not {SCHEMA!r}")
    if benchmark and document["benchmark"] not in (None, benchmark):
        raise ValueError(f"{path}: results of {document['benchmark']!r}, "
                         f"not {benchmark!r}")
    return document
