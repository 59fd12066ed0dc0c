// Known values: a kernel whose result can be worked out by hand.
// RUN: tile-run %s --function=halve_row_sum --args=2x4 --low=1 --high=1 --print-values | FileCheck %s
// RUN: tile-run %s --function=round_to_bf16 --args=3 --low=1.00390625 --high=1.00390625 --print-values | FileCheck %s --check-prefix=ROUND
// RUN: tile-run %s --function=round_to_bf16 --args=3 --low=1.00390625 --high=1.00390625 --print-values --exact | FileCheck %s --check-prefix=EXACT

// Inputs are all 1 (low == high); each row sums to 4, halved to 2.
// CHECK: shape: [2]
// CHECK: values: 2 2
func.func @halve_row_sum(%x: tensor<?x?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  %half = arith.constant 0.5 : f32
  %s = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %h = tile.splat %half like %s : f32, tensor<?xf32> -> tensor<?xf32>
  %r = arith.mulf %s, %h : tensor<?xf32>
  return %r : tensor<?xf32>
}

// 1 + 2^-8 is halfway between two bf16 values: ties to even gives 1.
// ROUND: values: 1 1 1
// EXACT: values: 1.00390625 1.00390625 1.00390625
func.func @round_to_bf16(%x: tensor<?xf32>) -> tensor<?xbf16> attributes {tile.kernel} {
  %b = tile.cast %x : tensor<?xf32> to tensor<?xbf16>
  return %b : tensor<?xbf16>
}
