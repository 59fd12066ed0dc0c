// RUN: tile-opt %s -tile-differentiate --tile-schedule --convert-tile-to-gpu | FileCheck %s

// An argument the backward uses only for its shape (the kernel signature's
// "uses": "shape") is never loaded, not even before dead code goes: Python
// passes a one-element stand-in for it. The backward of 2·x + z·z splats 2
// like x and reads z (%arg1) and the cotangent (%arg2), never x (%arg0).
func.func @twice_plus_square(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %c2 = arith.constant 2.0 : f32
  %two = tile.splat %c2 like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %tx = arith.mulf %x, %two : tensor<?x?xf32>
  %zz = arith.mulf %z, %z : tensor<?x?xf32>
  %y = arith.addf %tx, %zz : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// CHECK-LABEL: gpu.func @twice_plus_square_bwd(
// CHECK-NOT: load %arg0[
// CHECK: load %arg1[
// CHECK-NOT: load %arg0[
// CHECK: gpu.return
