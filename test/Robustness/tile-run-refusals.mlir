// What tile-run refuses, each with a located error or one that names the
// option, the size and the limit, and exit status 1 (issue 50: the first two
// crashed, the third aborted, the fourth ran for over 20 s).
// RUN: %expect-error tile-run --function=declared --args= %s
// RUN: %expect-error tile-run --function=plain --args=2x2 %s
// RUN: not tile-run --function=declared --args= %s 2>&1 | FileCheck %s --check-prefix=DECLARED
// RUN: not tile-run --function=plain --args=2x2 %s 2>&1 | FileCheck %s --check-prefix=PLAIN
// RUN: not tile-run --function=wide --args=100000000x100 %s 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: %expect-error tile-run --function=tall --gradient-check --args=65537x16 %s
// RUN: not tile-run --function=tall --gradient-check --args=65537x16 %s 2>&1 | FileCheck %s --check-prefix=CHECK-LIMIT
// RUN: tile-run --function=tall --gradient-check --args=65537x16 --max-element-ops=1000000000 --directions=1 %s | FileCheck %s --check-prefix=RAISED
// RUN: not tile-run --function=wide --args=4096x4096 --max-element-ops=1000 %s 2>&1 | FileCheck %s --check-prefix=EVAL-LIMIT
// RUN: %expect-error tile-run --function=tall --args=65536x16 %s
// RUN: not tile-run --function=tall --args=65536x16 %s 2>&1 | FileCheck %s --check-prefix=STATIC
// RUN: not tile-run --function=wide --gradient-check --args=MxN --rows=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33 --widths=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33 %s 2>&1 | FileCheck %s --check-prefix=CASES
// RUN: not tile-run --function=wide --args=2x2 --max-element-ops=0 %s 2>&1 | FileCheck %s --check-prefix=ZERO

// DECLARED: tile-run-refusals.mlir:[[# @LINE + 10]]:1: error: @declared is a declaration (no body); tile-run takes kernels only (func.func with a body and `attributes {tile.kernel}`)
// PLAIN: tile-run-refusals.mlir:[[# @LINE + 11]]:1: error: @plain is not a tile.kernel; tile-run takes kernels only (func.func with a body and `attributes {tile.kernel}`)
// HUGE: error: argument #0: shape 100000000x100 holds more than the evaluator's limit of 67108864 elements
// CHECK-LIMIT: tile-run-refusals.mlir:[[# @LINE + 19]]:1: error: the gradient check of @tall at these shapes takes 115 evaluations of about 3145776 element operations each, over its limit of 268435456 in all; check smaller shapes (--rows, --widths) or raise tile-run --max-element-ops
// RAISED: 1 gradients checked, 0 failed
// EVAL-LIMIT: tile-run-refusals.mlir:[[# @LINE + 11]]:1: error: evaluating @wide at these shapes takes about 50331648 element operations, over the evaluator's limit of 1000 (tile-run --max-element-ops raises it)
// STATIC: tile-run-refusals.mlir:[[# @LINE + 16]]:17: error: argument #0 (tensor<65537x16xf32>): dimension 0 must be 65537, got 65536
// CASES: error: --rows and --widths give 1089 cases, over tile-run's limit of 1024
// ZERO: error: --max-element-ops must be at least 1

func.func private @declared(tensor<?x?xf32>) -> tensor<?x?xf32>

func.func @plain(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  return %x : tensor<?x?xf32>
}

func.func @wide(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = math.tanh %x : tensor<?x?xf32>
  %z = arith.mulf %y, %x : tensor<?x?xf32>
  return %z : tensor<?x?xf32>
}

func.func @tall(%x: tensor<65537x16xf32>) -> tensor<65537x16xf32> attributes {tile.kernel} {
  %y = math.tanh %x : tensor<65537x16xf32>
  %z = arith.mulf %y, %x : tensor<65537x16xf32>
  return %z : tensor<65537x16xf32>
}
