// Large and deep inputs that once overflowed the stack, took exponential or
// quadratic time, or ran out of memory: each gives a result or a located
// error (issue 19). Timings on the 2-core build machine are in
// docs/Robustness.md; lit's default limits catch a hang.
//
// 100,000 elementwise ops: evaluated and differentiated; the GPU lowering
// refuses kernels past 4096 ops (LLVM's backend is quadratic in size).
// RUN: %python %tile_src/test/lib/gen_stress.py chain 100000 > %t.chain.mlir
// RUN: tile-run %t.chain.mlir --args=3x5 | FileCheck %s --check-prefix=EVAL
// RUN: tile-opt %t.chain.mlir -tile-differentiate -o /dev/null
// RUN: %expect-error tile-translate --tile-to-ptx %t.chain.mlir
// RUN: %python %tile_src/test/lib/gen_stress.py chain 4000 > %t.chain4k.mlir
// RUN: tile-translate --tile-manifest %t.chain4k.mlir -o /dev/null
//
// 100,000 per-row ops in a chain, and a 40-level DAG of shared per-row sums,
// through save-row-stats. The chain saves ~50,000 row values: adding them to
// the signatures one at a time was quadratic (20,000 ops: 2.7 s and 1.9 GB;
// 100,000: minutes and out of memory); at once, 1.3 s and 0.25 GB.
// RUN: %python %tile_src/test/lib/gen_stress.py row-chain 100000 > %t.rows.mlir
// RUN: timeout 60 tile-opt %t.rows.mlir -tile-differentiate=policy=save-row-stats -o /dev/null
// RUN: %python %tile_src/test/lib/gen_stress.py row-dag 40 > %t.rowdag.mlir
// RUN: tile-opt %t.rowdag.mlir -tile-differentiate=policy=save-row-stats -o /dev/null
// RUN: tile-translate --tile-to-ptx %t.rowdag.mlir -o /dev/null
//
// 40 levels of `concat %c, %c`: a width of 2^40 columns names in the
// manifest; the GPU lowering stops at its evaluation budget.
// RUN: %python %tile_src/test/lib/gen_stress.py concat-dag 40 > %t.concat.mlir
// RUN: tile-translate --tile-manifest %t.concat.mlir | FileCheck %s --check-prefix=CONCAT
// RUN: %expect-error tile-translate --tile-to-ptx %t.concat.mlir
// RUN: %python %tile_src/test/lib/gen_stress.py index-dag 40 > %t.index.mlir
// RUN: %expect-error tile-translate --tile-manifest %t.index.mlir
//
// 100,000-deep nesting of types, attributes and regions.
// RUN: %python %tile_src/test/lib/gen_stress.py nest-type 100000 > %t.type.mlir
// RUN: %expect-error tile-opt %t.type.mlir
// RUN: %expect-error tile-translate --tile-manifest %t.type.mlir
// RUN: %expect-error tile-run %t.type.mlir
// RUN: %python %tile_src/test/lib/gen_stress.py nest-attr 100000 > %t.attr.mlir
// RUN: %expect-error tile-opt %t.attr.mlir
// RUN: %python %tile_src/test/lib/gen_stress.py nest-region 100000 > %t.region.mlir
// RUN: %expect-error tile-opt --allow-unregistered-dialect %t.region.mlir

// EVAL: count: 15
// CONCAT: (2 * (2 *
