// RUN: tile-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>)
// CHECK-NOT: tile.cast
// CHECK: return %[[X]]
func.func @cast_same_type(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = tile.cast %x : tensor<?x?xf32> to tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Widening to f32 and back is exact.
// CHECK-LABEL: func.func @cast_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<?xbf16>, %[[H:.*]]: tensor<?xf16>)
// CHECK-NOT: tile.cast
// CHECK: return %[[X]], %[[H]]
func.func @cast_round_trip(%x: tensor<?xbf16>, %h: tensor<?xf16>) -> (tensor<?xbf16>, tensor<?xf16>) {
  %0 = tile.cast %x : tensor<?xbf16> to tensor<?xf32>
  %1 = tile.cast %0 : tensor<?xf32> to tensor<?xbf16>
  %2 = tile.cast %h : tensor<?xf16> to tensor<?xf32>
  %3 = tile.cast %2 : tensor<?xf32> to tensor<?xf16>
  return %1, %3 : tensor<?xbf16>, tensor<?xf16>
}

// -----

// Narrowing then widening rounds: it must stay.
// CHECK-LABEL: func.func @cast_lossy_kept
// CHECK: tile.cast %{{.*}} : tensor<?xf32> to tensor<?xbf16>
// CHECK: tile.cast %{{.*}} : tensor<?xbf16> to tensor<?xf32>
func.func @cast_lossy_kept(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = tile.cast %x : tensor<?xf32> to tensor<?xbf16>
  %1 = tile.cast %0 : tensor<?xbf16> to tensor<?xf32>
  return %1 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_same_shape
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>)
// CHECK-NOT: tile.broadcast
// CHECK: return %[[X]]
func.func @broadcast_same_shape(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = tile.broadcast %x [] like %x : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_no_dims
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>)
// CHECK-NOT: tile.reduce
// CHECK: return %[[X]]
func.func @reduce_no_dims(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = tile.reduce sum %x [] : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @slice_whole_row
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>, %[[S:.*]]: tensor<2x8xf32>)
// CHECK-NOT: tile.slice
// CHECK: return %[[X]], %[[S]]
func.func @slice_whole_row(%x: tensor<?x?xf32>, %s: tensor<2x8xf32>) -> (tensor<?x?xf32>, tensor<2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %w = tensor.dim %x, %c1 : tensor<?x?xf32>
  %0 = tile.slice %x [%c0, %w] : tensor<?x?xf32> -> tensor<?x?xf32>
  %1 = tile.slice %s [%c0, %c8] : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @slice_part_kept
// CHECK: tile.slice
func.func @slice_part_kept(%x: tensor<?x?xf32>, %n: index) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %0 = tile.slice %x [%c0, %n] : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>)
// CHECK-NOT: tile.concat
// CHECK: return %[[X]]
func.func @concat_single(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = tile.concat %x : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// x·1, 1·x, x/1, x+0, 0+x, x+(−0), x−0 through tile.splat on dynamic shapes.
// CHECK-LABEL: func.func @arith_identities
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>)
// CHECK-NOT: arith.
// CHECK-NOT: tile.splat
// CHECK: return %[[X]]
func.func @arith_identities(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %nzero = arith.constant -0.0 : f32
  %ones = tile.splat %one like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %zeros = tile.splat %zero like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %nzeros = tile.splat %nzero like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %0 = arith.mulf %x, %ones : tensor<?x?xf32>
  %1 = arith.mulf %ones, %0 : tensor<?x?xf32>
  %2 = arith.divf %1, %ones : tensor<?x?xf32>
  %3 = arith.addf %2, %zeros : tensor<?x?xf32>
  %4 = arith.addf %zeros, %3 : tensor<?x?xf32>
  %5 = arith.addf %4, %nzeros : tensor<?x?xf32>
  %6 = arith.subf %5, %zeros : tensor<?x?xf32>
  return %6 : tensor<?x?xf32>
}

// -----

// A ones vector broadcast across rows is still all ones.
// CHECK-LABEL: func.func @mul_broadcast_one
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>, %[[R:.*]]: tensor<?xf32>)
// CHECK-NOT: arith.mulf
// CHECK: return %[[X]]
func.func @mul_broadcast_one(%x: tensor<?x?xf32>, %r: tensor<?xf32>) -> tensor<?x?xf32> {
  %one = arith.constant 1.0 : f32
  %ones = tile.splat %one like %r : f32, tensor<?xf32> -> tensor<?xf32>
  %b = tile.broadcast %ones [1] like %x : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %0 = arith.mulf %x, %b : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Not identities: 0 − x, x·2, 1/x stay.
// CHECK-LABEL: func.func @not_identities
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: arith.divf
func.func @not_identities(%x: tensor<?xf32>) -> tensor<?xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %zeros = tile.splat %zero like %x : f32, tensor<?xf32> -> tensor<?xf32>
  %ones = tile.splat %one like %x : f32, tensor<?xf32> -> tensor<?xf32>
  %twos = tile.splat %two like %x : f32, tensor<?xf32> -> tensor<?xf32>
  %0 = arith.subf %zeros, %x : tensor<?xf32>
  %1 = arith.mulf %0, %twos : tensor<?xf32>
  %2 = arith.divf %ones, %1 : tensor<?xf32>
  return %2 : tensor<?xf32>
}

// -----

// Static shapes: a constant splat becomes a dense constant; broadcasting a
// splat is a splat of the larger shape.
// CHECK-LABEL: func.func @splat_forms
// CHECK-SAME: (%[[S:.*]]: f32, %[[R:.*]]: tensor<?xf32>, %[[X:.*]]: tensor<?x?xf32>)
// CHECK: %[[C:.*]] = arith.constant dense<3.000000e+00> : tensor<4xf32>
// CHECK: %[[B:.*]] = tile.splat %[[S]] like %[[X]] : f32, tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK: return %[[C]], %[[B]]
func.func @splat_forms(%s: f32, %r: tensor<?xf32>, %x: tensor<?x?xf32>) -> (tensor<4xf32>, tensor<?x?xf32>) {
  %three = arith.constant 3.0 : f32
  %shape = arith.constant dense<0.0> : tensor<4xf32>
  %0 = tile.splat %three like %shape : f32, tensor<4xf32> -> tensor<4xf32>
  %v = tile.splat %s like %r : f32, tensor<?xf32> -> tensor<?xf32>
  %1 = tile.broadcast %v [1] like %x : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %0, %1 : tensor<4xf32>, tensor<?x?xf32>
}

// -----

// RMSNorm specialized to offset = 0: the weight offset add disappears.
// CHECK-LABEL: func.func @rms_norm_no_offset
// CHECK: %[[WF:.*]] = tile.cast %{{.*}} : tensor<?xbf16> to tensor<?xf32>
// CHECK-NEXT: tile.broadcast %[[WF]] [0]
func.func @rms_norm_no_offset(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>, %eps: f32 {tile.nograd})
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %offset = arith.constant 0.0 : f32
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %sq = arith.mulf %xf, %xf : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %epsv = tile.splat %eps like %ms : f32, tensor<?xf32> -> tensor<?xf32>
  %var = arith.addf %ms, %epsv : tensor<?xf32>
  %rstd = math.rsqrt %var : tensor<?xf32>
  %rb = tile.broadcast %rstd [1] like %xf : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %xhat = arith.mulf %xf, %rb : tensor<?x?xf32>
  %wf = tile.cast %w : tensor<?xbf16> to tensor<?xf32>
  %offv = tile.splat %offset like %wf : f32, tensor<?xf32> -> tensor<?xf32>
  %wo = arith.addf %wf, %offv : tensor<?xf32>
  %wb = tile.broadcast %wo [0] like %xf : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %xhat, %wb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
