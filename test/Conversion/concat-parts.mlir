// RUN: tile-opt %tile_src/examples/silu_and_mul.mlir -tile-differentiate -canonicalize -cse --tile-specialize-widths=widths=0:3072 --tile-schedule --convert-tile-to-gpu | FileCheck %s
// RUN: tile-opt %tile_src/examples/silu_and_mul.mlir -tile-differentiate -canonicalize -cse --tile-specialize-widths=widths=0:3071 --tile-schedule --convert-tile-to-gpu | FileCheck %s --check-prefix=ODD

// silu_and_mul's backward returns dx = [da db], a concat of two halves of
// x's width. Specialized for an even width, its column loop is over one
// half (1536 columns, 192 groups of 8): the chunk at column c computes and
// stores dx[c] and dx[c + 1536], both halves of x read before either is
// written, so dx may be x's own buffer (the MLP runs it in place over
// [g u]). The rows are 3072 apart (the stores' pitch), not 1536.
// CHECK-LABEL: gpu.func @silu_and_mul_bwd(
// CHECK-DAG: arith.constant 1536 : index
// CHECK-DAG: arith.constant 192 : index
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %c3072{{.*}} : index
// CHECK: vector.store %{{.*}}, %arg2[
// CHECK: vector.store %{{.*}}, %arg2[
// CHECK: gpu.return

// An odd width pads the halves with one column of zeros: no part covers
// it, so the loop is over the whole row as before.
// ODD-LABEL: gpu.func @silu_and_mul_bwd(
// ODD-NOT: arith.constant 1535 : index
// ODD: gpu.return
