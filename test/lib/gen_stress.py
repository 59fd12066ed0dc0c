#!/usr/bin/env python3
"""Writes large or deep tile IR that once crashed or hung the tools.

usage: gen_stress.py KIND N

  chain N        a kernel of N elementwise ops in one chain
  row-chain N    a row reduction followed by N per-row ops in a chain
  row-dag N      N levels of %v(i) = addf %v(i-1), %v(i-1) after a reduction
  concat-dag N   N levels of %c(i) = concat %c(i-1), %c(i-1)
  index-dag N    N levels of %s(i) = addi %s(i-1), %s(i-1) sizing a slice
  nest-type N    a function type nested N parentheses deep
  nest-attr N    an attribute nested N brackets deep
  nest-region N  N regions nested in each other

Each is valid IR or a located error for the tools: never a crash or a
hang (test/Robustness/stress.mlir).
"""

import sys

HEADER = ("func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> "
          "attributes {tile.kernel} {")


def chain(n):
    lines = [HEADER, "  %v0 = arith.mulf %x, %x : tensor<?x?xf32>"]
    for i in range(1, n):
        op = "arith.addf" if i % 2 else "arith.mulf"
        lines.append(f"  %v{i} = {op} %v{i-1}, %x : tensor<?x?xf32>")
    lines += [f"  return %v{n-1} : tensor<?x?xf32>", "}"]
    return "\n".join(lines)


def row_ops(n, shared):
    lines = [HEADER,
             "  %r0 = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>"]
    for i in range(1, n + 1):
        rhs = f"%r{i-1}" if shared else "%r0"
        op = "arith.addf" if shared or i % 2 else "arith.mulf"
        lines.append(f"  %r{i} = {op} %r{i-1}, {rhs} : tensor<?xf32>")
    lines += [f"  %b = tile.broadcast %r{n} [1] like %x : tensor<?xf32>, "
              "tensor<?x?xf32> -> tensor<?x?xf32>",
              "  %y = arith.mulf %x, %b : tensor<?x?xf32>",
              "  return %y : tensor<?x?xf32>", "}"]
    return "\n".join(lines)


def concat_dag(n):
    lines = [HEADER, "  %c0 = arith.mulf %x, %x : tensor<?x?xf32>"]
    for i in range(1, n + 1):
        lines.append(f"  %c{i} = tile.concat %c{i-1}, %c{i-1} : "
                     "tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>")
    lines += [f"  return %c{n} : tensor<?x?xf32>", "}"]
    return "\n".join(lines)


def index_dag(n):
    lines = [HEADER, "  %s0 = arith.constant 0 : index"]
    for i in range(1, n + 1):
        lines.append(f"  %s{i} = arith.addi %s{i-1}, %s{i-1} : index")
    lines += [f"  %y = tile.slice %x [%s0, %s{n}] : tensor<?x?xf32> -> "
              "tensor<?x?xf32>", "  return %y : tensor<?x?xf32>", "}"]
    return "\n".join(lines)


def main():
    kind, n = sys.argv[1], int(sys.argv[2])
    if kind == "chain":
        text = chain(n)
    elif kind == "row-chain":
        text = row_ops(n, shared=False)
    elif kind == "row-dag":
        text = row_ops(n, shared=True)
    elif kind == "concat-dag":
        text = concat_dag(n)
    elif kind == "index-dag":
        text = index_dag(n)
    elif kind == "nest-type":
        text = "func.func private @f() -> " + "(" * n + "f32" + ")" * n
    elif kind == "nest-attr":
        text = ("func.func private @f() attributes {a = " + "[" * n + "1" +
                "]" * n + "}")
    elif kind == "nest-region":
        text = ("func.func @f() {\n" + '"test.op"() ({\n' * n +
                "}) : () -> ()\n" * n + "return\n}")
    else:
        sys.exit(f"unknown kind {kind}")
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
