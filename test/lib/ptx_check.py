#!/usr/bin/env python3
"""Lowers a tile kernel file, forward and derived backward, to PTX and
assembles it: fails unless ptxas accepts it, no __nv_ symbol is left, and
no kernel spills to local memory.

usage: ptx_check.py TOOLS_DIR PTXAS FILE CHIP [DTYPE] [DIFFERENTIATE-OPTIONS]

DTYPE (bf16, f16 or f32) replaces bf16 in FILE first, so one kernel is
checked at every storage type.
"""

import os
import re
import subprocess
import sys
import tempfile


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        print(f"FAIL: {' '.join(command)}\n{result.stderr}")
        sys.exit(1)
    return result


def main() -> int:
    tools, ptxas, path, chip = sys.argv[1:5]
    dtype = sys.argv[5] if len(sys.argv) > 5 else "bf16"
    options = sys.argv[6] if len(sys.argv) > 6 else "policy=recompute"
    source = open(path).read().replace("bf16", dtype)
    with tempfile.TemporaryDirectory() as tmp:
        derived = run([os.path.join(tools, "tile-opt"), "-",
                       f"-tile-differentiate={options}", "-canonicalize",
                       "-cse"], input=source).stdout
        ptx_path = os.path.join(tmp, "k.ptx")
        run([os.path.join(tools, "tile-translate"), "--tile-to-ptx",
             f"--tile-chip={chip}", "-", "-o", ptx_path], input=derived)
        ptx = open(ptx_path).read()
        kernels = re.findall(r"\.visible \.entry (\w+)\(", ptx)
        if "__nv_" in ptx:
            print("FAIL: unresolved libdevice function in the PTX")
            return 1
        info = run([ptxas, f"-arch={chip}", "-v", ptx_path, "-o",
                    os.path.join(tmp, "k.cubin")]).stderr
        spills = re.findall(r"([1-9]\d*) bytes spill", info)
        if spills:
            print(f"FAIL: spills {spills}\n{info}")
            return 1
    name = os.path.basename(path)
    print(f"ok: {name} {dtype} {chip} {options}: {len(kernels)} kernels "
          f"({', '.join(kernels)}), assembled, no spills")
    return 0


if __name__ == "__main__":
    sys.exit(main())
