// The derived backward of every example against finite differences, under
// both recompute policies and with main_grad accumulation, at the irregular
// shapes: rows 1, 7, 13 and widths 1, 13, 1000, 3000.
//
// RUN: tile-run %tile_src/examples/swiglu.mlir --gradient-check --args=MxN,MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s --check-prefix=TWO
// RUN: tile-run %tile_src/examples/swiglu.mlir --gradient-check --policy=save-row-stats --args=MxN,MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s --check-prefix=TWO
// RUN: tile-run %tile_src/examples/silu_and_mul.mlir --gradient-check --args=MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s --check-prefix=ONE
// RUN: tile-run %tile_src/examples/silu_and_mul.mlir --gradient-check --policy=save-row-stats --args=MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s --check-prefix=ONE
// The routing weights' gradient is a row sum (the adjoint of a broadcast
// over the row): even widths only, as silu_and_mul's halves.
// RUN: tile-run %tile_src/examples/scaled_silu_and_mul.mlir --gradient-check --args=MxN,M --rows=1,7,13 --widths=2,14,1000,3000 | FileCheck %s --check-prefix=TWO
// RUN: tile-run %tile_src/examples/scaled_silu_and_mul.mlir --gradient-check --policy=save-row-stats --args=MxN,M --rows=1,7,13 --widths=2,14,1000,3000 | FileCheck %s --check-prefix=TWO
// RUN: tile-run %tile_src/examples/rms_norm.mlir --gradient-check --args=MxN,N,1e-6,0 --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s --check-prefix=TWO
// RUN: tile-run %tile_src/examples/rms_norm.mlir --gradient-check --policy=save-row-stats --args=MxN,N,1e-6,1 --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s --check-prefix=TWO
// RUN: tile-run %tile_src/examples/rms_norm.mlir --gradient-check --main-grad --args=MxN,N,1e-6,0 --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s --check-prefix=TWO
// RUN: tile-run %tile_src/examples/rms_norm.mlir --gradient-check --main-grad --policy=save-row-stats --args=MxN,N,1e-5,1 --rows=7 --widths=1000 --seed=3 | FileCheck %s --check-prefix=MAIN
//
// TWO: gradient check of @{{.*}} against finite differences
// TWO: args 1x1
// TWO: args 13x3000
// TWO: 24 gradients checked, 0 failed
// ONE: 12 gradients checked, 0 failed
// MAIN: policy save-row-stats, main-grad, seed 3
// MAIN: 2 gradients checked, 0 failed
