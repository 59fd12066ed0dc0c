#!/usr/bin/env python3
"""Seeds for the tile-run command-line harness (fuzz/tile-run.cpp).

usage: cli_seeds.py OUT_DIR FILE.mlir...

For every function of every file: --function with the function's name and
--args that fit its signature (shapes from M, N and small sizes, scalars),
once plainly and once per mode (--gradient, --gradient-check with both
policies and main_grad, --exact --print-values); and for every file, a run
without --function. Each seed is `ARGUMENT LINES\\n--\\nMODULE`, the format
the harness reads; the harness's mutator takes it from there (other
symbols, edge-case specs, option combinations, the module's structure).
"""

import pathlib
import re
import sys

FUNCTION = re.compile(r"func\.func\s+(?:private\s+)?@([\w.$]+)\s*\(([^)]*)\)")
TYPE = re.compile(r"(tensor<[^>]*>|\bf32\b|\bindex\b|\bi32\b|\bi64\b)")

MODES = [
    [],
    ["--gradient"],
    ["--gradient-check", "--rows=1,3", "--widths=1,7"],
    ["--gradient-check", "--policy=save-row-stats", "--rows=2", "--widths=5"],
    ["--gradient-check", "--main-grad", "--rows=2", "--widths=5"],
    ["--exact", "--print-values"],
]


def spec(type_text: str, symbolic: bool) -> str:
    if not type_text.startswith("tensor"):
        return "0.5" if type_text == "f32" else "0"
    dims = type_text[len("tensor<"):-1].split("x")[:-1]
    shape = []
    for index, dim in enumerate(dims):
        if dim != "?":
            shape.append(dim)
        elif symbolic:
            shape.append("M" if index == 0 and len(dims) == 2 else "N")
        else:
            shape.append("3" if index == 0 and len(dims) == 2 else "5")
    return "x".join(shape)


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for name in sys.argv[2:]:
        path = pathlib.Path(name)
        module = path.read_text(errors="replace")
        seeds = [[]]
        for function, arguments in FUNCTION.findall(module):
            types = TYPE.findall(arguments)
            for mode in MODES:
                symbolic = any(arg.startswith("--rows") for arg in mode)
                specs = ",".join(spec(t, symbolic) for t in types)
                seeds.append([f"--function={function}", f"--args={specs}"] +
                             mode)
        for index, args in enumerate(seeds):
            text = "".join(arg + "\n" for arg in args) + "--\n" + module
            (out / f"{path.stem}.{index}.cli").write_text(text)
            count += 1
    print(f"cli_seeds: {count} seeds in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
