// A static dimension of 2^63 - 1 (issue 49: tile-run once aborted with
// std::length_error on it): an error that names the size (argument sizes
// from the command line) or the mismatch (located), never an abort,
// in every mode.
// RUN: not tile-run --args=9223372036854775807x9223372036854775807 %s 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not tile-run --gradient-check --args=9223372036854775807x9223372036854775807 %s 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not tile-run --gradient --args=2x2 %s 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not tile-run --args=2x2 %s 2>&1 | FileCheck %s --check-prefix=MISMATCH

// HUGE: error: argument #0: shape 9223372036854775807x9223372036854775807 holds more than the evaluator's limit of 67108864 elements
// MISMATCH: tile-run-max-dimension.mlir:[[# @LINE + 2]]:14: error: argument #0 (tensor<9223372036854775807x9223372036854775807xf32>): dimension 0 must be 9223372036854775807, got 2

func.func @f(%x: tensor<9223372036854775807x9223372036854775807xf32>) -> tensor<9223372036854775807x9223372036854775807xf32> attributes {tile.kernel} {
  %y = arith.addf %x, %x : tensor<9223372036854775807x9223372036854775807xf32>
  return %y : tensor<9223372036854775807x9223372036854775807xf32>
}
