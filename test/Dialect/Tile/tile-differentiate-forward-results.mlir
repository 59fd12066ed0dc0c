// A forward result the backward needs is read from the forward, not
// recomputed, where that stops the backward reading a tensor input
// (nextForwardResult); the same at every storage dtype.
// RUN: tile-opt %s -tile-differentiate -canonicalize -cse -split-input-file | FileCheck %s
// RUN: tile-opt %s -tile-specialize-storage=dtype=f32 -tile-differentiate -canonicalize -cse -split-input-file | FileCheck %s --check-prefix=F32

// h = x + r is returned and the backward needs it: it reads h (one tensor)
// instead of x and r (two); x and r remain arguments, unread.
// CHECK-LABEL: func.func @add_then_square_bwd(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x?xf32>, %[[R:[^:]*]]: tensor<?x?xf32>,
// CHECK-SAME: %[[H:[^:]*]]: tensor<?x?xf32> {tile.forward_result = 1 : i64}
// CHECK-NOT: arith.addf %[[X]]
// CHECK: arith.mulf %{{.*}}, %[[H]]
// CHECK: return
func.func @add_then_square(%x: tensor<?x?xf32>, %r: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {tile.kernel} {
  %h = arith.addf %x, %r : tensor<?x?xf32>
  %y = arith.mulf %h, %h : tensor<?x?xf32>
  return %y, %h : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// A 16-bit result rounds the f32 value the backward needs: it reads the
// result and widens it.
// CHECK-LABEL: func.func @sigmoid_bwd(
// CHECK-SAME: %[[Y:[^:]*]]: tensor<?x?xbf16> {tile.forward_result = 0 : i64}
// CHECK: %[[S:.*]] = tile.cast %[[Y]] : tensor<?x?xbf16> to tensor<?x?xf32>
// CHECK-NOT: tile.sigmoid
// CHECK: return
// Specialized for f32 storage first: the same argument, f32, no widening.
// F32-LABEL: func.func @sigmoid_bwd(
// F32-SAME: tensor<?x?xf32> {tile.forward_result = 0 : i64}
// F32-NOT: tile.sigmoid
// F32: return
func.func @sigmoid(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %s = tile.sigmoid %xf : tensor<?x?xf32>
  %y = tile.cast %s : tensor<?x?xf32> to tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}

// -----

// t = tanh(x * w): the backward needs t, but the weight's gradient reads x
// anyway, so reading t would only add a read: t is recomputed.
// CHECK-LABEL: func.func @scale_bwd(
// CHECK-NOT: tile.forward_result
// CHECK: return
func.func @scale(%x: tensor<?x?xf32>, %w: tensor<?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %wb = tile.broadcast %w [0] like %x : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %wb : tensor<?x?xf32>
  %t = math.tanh %y : tensor<?x?xf32>
  return %t : tensor<?x?xf32>
}

// -----

// The backward uses h only for its shape (the sum's cotangent broadcast
// like h): it reads no data of it, nor of x and r, so nothing is read from
// the forward.
// CHECK-LABEL: func.func @add_then_sum_bwd(
// CHECK-NOT: tile.forward_result
// CHECK: return
func.func @add_then_sum(%x: tensor<?x?xf32>, %r: tensor<?x?xf32>)
    -> (tensor<?xf32>, tensor<?x?xf32>) attributes {tile.kernel} {
  %h = arith.addf %x, %r : tensor<?x?xf32>
  %s = tile.reduce sum %h [1] : tensor<?x?xf32> -> tensor<?xf32>
  return %s, %h : tensor<?xf32>, tensor<?x?xf32>
}

// -----

// A softmax in bf16: the backward is written through the quotient the
// forward returns (y·(g − Σ g·y), QuotientResults.h), reads y rounded to
// bf16 as PyTorch's softmax backward reads its saved 16-bit output, and no
// longer reads x.
// CHECK-LABEL: func.func @softmax_bf16_bwd(
// CHECK-SAME: %[[Y:[^:]*]]: tensor<?x?xbf16> {tile.forward_result = 0 : i64}
// CHECK: %[[YF:.*]] = tile.cast %[[Y]] : tensor<?x?xbf16> to tensor<?x?xf32>
// CHECK-NOT: math.exp
// CHECK: tile.reduce sum
// CHECK-NOT: {{tile.reduce|math.exp}}
// CHECK: arith.mulf %{{.*}}, %[[YF]]
// CHECK: return
// F32-LABEL: func.func @softmax_bf16_bwd(
// F32-SAME: {tile.forward_result = 0 : i64}
// F32-NOT: math.exp
// F32: return
func.func @softmax_bf16(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %m = tile.reduce max %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = tile.broadcast %m [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = arith.subf %xf, %mb : tensor<?x?xf32>
  %e = math.exp %d : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.divf %e, %sb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}

// -----

// The quotient's numerator is also returned on its own: the backward needs
// x for it anyway, so the rewrite through the quotient would free nothing
// and is undone; the backward is the one the sweep derived.
// CHECK-LABEL: func.func @quotient_and_numerator_bwd(
// CHECK-NOT: tile.forward_result
// CHECK: math.exp
// CHECK: return
func.func @quotient_and_numerator(%x: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {tile.kernel} {
  %e = math.exp %x : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.divf %e, %sb : tensor<?x?xf32>
  %z = arith.addf %e, %x : tensor<?x?xf32>
  return %y, %z : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// The bf16 result is used again in the forward (squared): the backward
// would read that rounded value, not the f32 quotient, so nothing is
// rewritten through the quotient and the backward recomputes from x.
// CHECK-LABEL: func.func @softmax_rounded_twice_bwd(
// CHECK-NOT: tile.forward_result
// CHECK: math.exp
// CHECK: return
func.func @softmax_rounded_twice(%x: tensor<?x?xbf16>)
    -> (tensor<?x?xbf16>, tensor<?x?xf32>) attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %m = tile.reduce max %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = tile.broadcast %m [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = arith.subf %xf, %mb : tensor<?x?xf32>
  %e = math.exp %d : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.divf %e, %sb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  %yr = tile.cast %yb : tensor<?x?xbf16> to tensor<?x?xf32>
  %sq = arith.mulf %yr, %yr : tensor<?x?xf32>
  return %yb, %sq : tensor<?x?xbf16>, tensor<?x?xf32>
}
