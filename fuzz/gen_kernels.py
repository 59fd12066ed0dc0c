#!/usr/bin/env python3
"""Writes random well-typed tile kernels: the structure-aware generator.

usage: gen_kernels.py --count N [--seed S] --out DIR

Each kernel is a random DAG over the ops that have derivative rules
(elementwise arith/math, tile.sigmoid, row reductions and broadcasts,
weights broadcast over rows, scalar parameters, arith.select on a
comparison), in a storage dtype of f32, bf16 or f16, with one or two
results. Values stay in ranges where every op is smooth and finite (a
denominator is 1 + v*v, a logarithm's argument likewise, exp sees a tanh),
so that finite differences are a fair reference for the derived backward;
sums are halved and rows reduced by their mean, so that no value outgrows
the inputs' range (a saturated tanh or erf has a gradient below what finite
differences resolve).

Whatever picks between values compares exact values only, far from a
tie. The GPU computes in f32 and the evaluator in float64, so two computed
values within an f32 rounding of each other could be ordered differently
by the two, and the result or its gradient jump (the first GPU runs found
exactly that with 4,096-wide min reductions of cos); and finite
differences across a tie measure neither side's derivative. So maximumf,
minimumf and cmpf + select compare an input with a constant no bf16 or
f16 value equals (0.3, -0.7, 1.1), and max and min reductions read f32
inputs only (bf16 and f16 inputs repeat within a row).

The first line of each file is `// ARGS: spec,spec,...` for tile-run's
--args (M and N are placeholders for the rows and the width); the fuzzers
take the files as seeds and fuzz/differential.py runs them.
"""

import argparse
import os
import random

DTYPES = ["f32", "bf16", "f16"]
MAT = "tensor<?x?xf32>"
VEC = "tensor<?xf32>"


class Kernel:
    """One kernel under construction: its lines and its pools of values."""

    def __init__(self, rng, name, dtype):
        self.rng = rng
        self.dtype = dtype
        self.name = name
        self.lines = []
        self.count = 0
        self.mats = []  # per-element f32 values, tensor<?x?xf32>
        self.inputs = []  # the f32 values of the input matrices
        self.rows = []  # one f32 per row, tensor<?xf32>
        self.anchor = None  # a matrix every broadcast takes its shape from

    def fresh(self):
        self.count += 1
        return f"%v{self.count}"

    def emit(self, text):
        value = self.fresh()
        self.lines.append(f"  {value} = {text}")
        return value

    def pick(self, pool):
        # Prefer recent values (deep chains) but reuse old ones (shared
        # values: the DAG's fan-out, which recomputation must respect).
        if self.rng.random() < 0.6:
            return pool[-1 - self.rng.randrange(min(3, len(pool)))]
        return self.rng.choice(pool)

    def splat(self, constant, like, type_):
        c = self.emit(f"arith.constant {constant!r} : f32")
        return self.emit(f"tile.splat {c} like {like} : f32, {type_} -> {type_}")

    def safe_positive(self, v, type_):
        """1 + v*v: a denominator or logarithm argument far from zero."""
        sq = self.emit(f"arith.mulf {v}, {v} : {type_}")
        one = self.splat(1.0, v, type_)
        return self.emit(f"arith.addf {sq}, {one} : {type_}")

    def unary(self, v, type_):
        rng = self.rng
        kind = rng.choice(["negf", "tanh", "exp", "sigmoid", "sqrt", "rsqrt",
                           "log", "sin", "cos", "erf", "mulc"])
        if kind == "negf":
            return self.emit(f"arith.negf {v} : {type_}")
        if kind in ("tanh", "sin", "cos", "erf"):
            return self.emit(f"math.{kind} {v} : {type_}")
        if kind == "exp":
            t = self.emit(f"math.tanh {v} : {type_}")
            return self.emit(f"math.exp {t} : {type_}")
        if kind == "sigmoid":
            return self.emit(f"tile.sigmoid {v} : {type_}")
        if kind == "mulc":
            c = self.splat(rng.choice([0.5, -0.75]), v, type_)
            return self.emit(f"arith.mulf {v}, {c} : {type_}")
        p = self.safe_positive(v, type_)
        op = {"sqrt": "math.sqrt", "rsqrt": "math.rsqrt", "log": "math.log"}[kind]
        return self.emit(f"{op} {p} : {type_}")

    def binary(self, a, b, type_):
        rng = self.rng
        choices = ["addf", "subf", "mulf", "mulf", "divf", "fma"]
        if type_ == MAT:
            choices += ["maximumf", "minimumf", "select"]
        kind = rng.choice(choices)
        if kind in ("maximumf", "minimumf", "select"):
            i = rng.choice(self.inputs)
            j = self.splat(rng.choice([0.3, -0.7, 1.1]), i, type_)
            if kind != "select":
                return self.emit(f"arith.{kind} {i}, {j} : {type_}")
        if kind == "divf":
            d = self.safe_positive(b, type_)
            return self.emit(f"arith.divf {a}, {d} : {type_}")
        if kind == "select":
            cmp_type = type_.replace("f32", "i1")
            c = self.emit(f"arith.cmpf ogt, {i}, {j} : {type_}")
            t = self.emit(f"math.tanh {a} : {type_}")
            return self.emit(
                f"arith.select {c}, {t}, {b} : {cmp_type}, {type_}")
        if kind == "fma":
            t = self.emit(f"math.tanh {b} : {type_}")
            return self.halve(
                self.emit(f"math.fma {a}, {t}, {a} : {type_}"), type_)
        if kind == "mulf":
            # Keep products bounded: one factor goes through tanh.
            t = self.emit(f"math.tanh {b} : {type_}")
            return self.emit(f"arith.mulf {a}, {t} : {type_}")
        return self.halve(self.emit(f"arith.{kind} {a}, {b} : {type_}"),
                          type_)

    def halve(self, v, type_):
        """Sums and differences are halved, so that no value outgrows the
        inputs' range: tanh, erf and sigmoid of a large value have a
        gradient finite differences cannot see above their round-off."""
        half = self.splat(0.5, v, type_)
        return self.emit(f"arith.mulf {v}, {half} : {type_}")

    def reduce(self):
        # Means, not sums: a sum of a wide row outgrows every range (see
        # halve); the sum's rule is the mean's times the width.
        kind = self.rng.choice(["mean", "mean", "max", "min"] if self.dtype ==
                               "f32" else ["mean"])
        source = self.pick(self.mats if kind == "mean" else self.inputs)
        return self.emit(f"tile.reduce {kind} {source} [1] : {MAT} -> {VEC}")

    def broadcast(self, row):
        return self.emit(f"tile.broadcast {row} [1] like {self.anchor} : "
                         f"{VEC}, {MAT} -> {MAT}")

    def step(self):
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            self.mats.append(self.unary(self.pick(self.mats), MAT))
        elif r < 0.65:
            self.mats.append(
                self.binary(self.pick(self.mats), self.pick(self.mats), MAT))
        elif r < 0.78:
            self.rows.append(self.reduce())
        elif r < 0.88 and self.rows:
            row = self.pick(self.rows)
            if rng.random() < 0.5:
                row = (self.unary(row, VEC) if rng.random() < 0.5 else
                       self.binary(row, self.pick(self.rows), VEC))
                self.rows.append(row)
            self.mats.append(self.broadcast(row))
        elif self.rows:
            self.rows.append(
                self.binary(self.pick(self.rows), self.pick(self.rows), VEC))


def generate(rng, index):
    dtype = rng.choice(DTYPES)
    storage = f"tensor<?x?x{dtype}>"
    k = Kernel(rng, f"k{index}", dtype)
    params, specs = [], []
    inputs = rng.randint(1, 3)
    for i in range(inputs):
        params.append(f"%x{i}: {storage}")
        specs.append("MxN")
        if dtype == "f32":
            k.mats.append(f"%x{i}")
        else:
            k.mats.append(k.emit(f"tile.cast %x{i} : {storage} to {MAT}"))
        k.inputs.append(k.mats[-1])
    k.anchor = k.mats[0]
    if rng.random() < 0.5:  # a weight per column, broadcast over rows
        wtype = f"tensor<?x{dtype}>"
        params.append(f"%w: {wtype}")
        specs.append("N")
        w = "%w" if dtype == "f32" else k.emit(f"tile.cast %w : {wtype} to {VEC}")
        k.mats.append(k.emit(f"tile.broadcast {w} [0] like {k.anchor} : "
                             f"{VEC}, {MAT} -> {MAT}"))
    if rng.random() < 0.3:  # a scalar parameter, not differentiated
        params.append("%s: f32 {tile.nograd}")
        specs.append(str(rng.choice([0.5, 1.25, -0.75])))
        k.mats.append(k.emit(f"tile.splat %s like {k.anchor} : f32, {MAT} "
                             f"-> {MAT}"))
    for _ in range(rng.randint(2, 14)):
        k.step()
    results = [k.mats[-1]]
    if rng.random() < 0.35 and len(k.mats) > 2:
        results.append(k.pick(k.mats[:-1]))
    outs = []
    for value in results:
        if dtype == "f32":
            outs.append(value)
        else:
            outs.append(k.emit(f"tile.cast {value} : {MAT} to {storage}"))
    result_types = ", ".join([storage] * len(outs))
    signature = (f"func.func @{k.name}({', '.join(params)}) -> "
                 f"({result_types}) attributes {{tile.kernel}} {{")
    text = [f"// ARGS: {','.join(specs)}", signature] + k.lines
    text.append(f"  return {', '.join(outs)} : {result_types}")
    text.append("}")
    return "\n".join(text) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    for i in range(args.count):
        path = os.path.join(args.out, f"gen-{args.seed}-{i}.mlir")
        with open(path, "w") as f:
            f.write(generate(rng, i))


if __name__ == "__main__":
    main()
