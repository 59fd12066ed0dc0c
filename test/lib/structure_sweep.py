#!/usr/bin/env python3
"""Every Tile attribute on every malformed function shape, through every tool.

usage: structure_sweep.py BIN_DIR WORK_DIR

MLIR runs a dialect's attribute verifiers before func.func's own verifier,
so a Tile verifier that took a body, its block arguments or its terminator
on trust crashed every tool at parse time (issue 50). This sweep writes, in
generic form, one function per pair of

  - a malformed shape: no region, no body, an empty block, too few or mistyped block
    arguments, no terminator, a terminator that is not func.return, a
    return of the wrong values, several blocks; and
  - a Tile attribute: tile.kernel, tile.schedule, tile.specialize,
    tile.backward_of / tile.forward_of, the argument roles (tile.nograd,
    tile.cotangent, tile.saved, tile.main_grad), the result roles
    (tile.gradient, tile.primal, tile.saved) and the per-op policy
    (tile.save, tile.recompute),

and runs tile-opt, the three tile-translate translations and tile-run on
it. Each must exit with status 1 and say `file:line:col: error:`: never a
crash, never a success, never an error without its place.
"""

import pathlib
import re
import subprocess
import sys

T2 = "tensor<?x?xf32>"
TANH = f'%y = "math.tanh"(%x) {{POLICY}} : ({T2}) -> {T2}'

# name -> (block argument list, body lines); None: no block at all;
# "none": not even the region.
SHAPES = {
    "no-region": "none",
    "no-body": None,
    "empty-block": ("", []),
    "missing-argument": ("", ['"func.return"() : () -> ()']),
    "mistyped-argument": (
        "%x: tensor<?xf32>", ['"func.return"(%x) : (tensor<?xf32>) -> ()']),
    "no-terminator": (f"%x: {T2}", [TANH]),
    "branch-terminator": (f"%x: {T2}", [TANH, '"cf.br"()[^bb0] : () -> ()']),
    "return-first": (f"%x: {T2}", [f'"func.return"(%x) : ({T2}) -> ()',
                                   TANH]),
    "wrong-return": (f"%x: {T2}", ['"func.return"() : () -> ()']),
    "two-blocks": (f"%x: {T2}", [f'"func.return"(%x) : ({T2}) -> ()', "^bb1:",
                                 f'"func.return"(%x) : ({T2}) -> ()']),
}

# name -> (function attributes, properties beyond the type and name,
# the policy attribute the tanh carries)
ATTRIBUTES = {
    "kernel": ("tile.kernel", "", ""),
    "schedule-rows": ('tile.schedule = {grid = "rows", threads = 128 : i64}',
                      "", ""),
    "schedule-elements": ("tile.kernel, tile.schedule = {grid = \"elements\", "
                          "threads = 128 : i64}", "", ""),
    "specialize": ("tile.kernel, tile.specialize = {w0 = 4 : i64}", "", ""),
    "backward-of": ("tile.kernel, tile.backward_of = @f", "", ""),
    "forward-of": ("tile.forward_of = @f", "", ""),
    "nograd": ("tile.kernel", "arg_attrs = [{tile.nograd}]", ""),
    "cotangent": ("tile.kernel", "arg_attrs = [{tile.cotangent = 0 : i64}]",
                  ""),
    "saved-argument": ("tile.kernel", "arg_attrs = [{tile.saved = 3 : i64}]",
                       ""),
    "main-grad": ("tile.kernel", "arg_attrs = [{tile.main_grad = 0 : i64}]",
                  ""),
    "gradient": ("tile.kernel", "res_attrs = [{tile.gradient = 0 : i64}]", ""),
    "primal": ("tile.kernel", "res_attrs = [{tile.primal = 0 : i64}]", ""),
    "saved-result": ("tile.kernel", "res_attrs = [{tile.saved = 0 : i64}]", ""),
    "save": ("tile.kernel", "", "{tile.save}"),
    "recompute": ("tile.kernel", "", "{tile.recompute}"),
}

TOOLS = {
    "tile-opt": ["tile-opt"],
    "signature": ["tile-translate", "--tile-kernel-signature"],
    "manifest": ["tile-translate", "--tile-manifest"],
    "ptx": ["tile-translate", "--tile-to-ptx"],
    "tile-run": ["tile-run", "--function=f", "--args=2x3"],
}

LOCATED = re.compile(r"\S+\.mlir:\d+:\d+: error: ")


def source(shape, attribute):
    attrs, properties, policy = ATTRIBUTES[attribute]
    props = f'function_type = ({T2}) -> {T2}, sym_name = "f"'
    if properties:
        props += ", " + properties
    if SHAPES[shape] == "none":
        region = ""
    elif SHAPES[shape] is None:
        props += ', sym_visibility = "private"'
        region = "({\n})"
    else:
        arguments, lines = SHAPES[shape]
        body = "\n".join("  " + line.replace("{POLICY}", policy)
                         for line in lines)
        region = f"({{\n^bb0({arguments}):\n{body}\n}})"
    return f'"func.func"() <{{{props}}}> {region} {{{attrs}}} : () -> ()\n'


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    bin_dir = pathlib.Path(sys.argv[1])
    work = pathlib.Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    runs = failures = 0
    for shape in SHAPES:
        for attribute in ATTRIBUTES:
            path = work / f"{shape}.{attribute}.mlir"
            path.write_text(source(shape, attribute))
            for tool, command in TOOLS.items():
                runs += 1
                result = subprocess.run(
                    [str(bin_dir / command[0])] + command[1:] + [str(path)],
                    capture_output=True, text=True, timeout=60)
                errors = [line for line in result.stderr.splitlines()
                          if "error:" in line]
                problem = None
                if result.returncode != 1:
                    problem = f"exit status {result.returncode}"
                elif not errors:
                    problem = "no error"
                elif not all(LOCATED.match(line) for line in errors):
                    problem = "an error without a location"
                if problem:
                    failures += 1
                    print(f"FAIL {shape} + {attribute} through {tool}: "
                          f"{problem}\n{path.read_text()}{result.stderr}")
    print(f"structure sweep: {len(SHAPES)} shapes x {len(ATTRIBUTES)} "
          f"attributes x {len(TOOLS)} tools = {runs} runs, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
