// RUN: tile-opt %s -tile-differentiate -canonicalize -cse | tile-translate --tile-kernel-signature | FileCheck %s

// The signature says what a function does with each argument: "data" (it
// reads the elements), "shape" (only the shape) or "none". The backward of
// 2·x + z·z reads z and the cotangent but not x, whose gradient is 2·dy:
// Python keeps no x for it (Kernel.arguments_unread).
func.func @twice_plus_square(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %c2 = arith.constant 2.0 : f32
  %two = tile.splat %c2 like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %tx = arith.mulf %x, %two : tensor<?x?xf32>
  %zz = arith.mulf %z, %z : tensor<?x?xf32>
  %y = arith.addf %tx, %zz : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// The forward reads both.
// CHECK: "role": "input",
// CHECK: "uses": "data"
// CHECK: "role": "input",
// CHECK: "uses": "data"
// CHECK: "name": "twice_plus_square",
// The backward: x for its shape only, z and dy for their elements.
// CHECK: "role": "input",
// CHECK: "uses": "shape"
// CHECK: "role": "input",
// CHECK: "uses": "data"
// CHECK: "role": "cotangent",
// CHECK: "uses": "data"
// CHECK: "backward_of": "twice_plus_square",
