// One value with three uses, in f32: y = u^3 + u^2 + sin(u) with u = x/2,
// computed so that u feeds two multiplies and a sine. Its cotangent is the
// sum of three contributions.
//
// RUN: tile-run %s --gradient-check --args=MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-opt %s -tile-differentiate | FileCheck %s --check-prefix=RAW
// CHECK: 12 gradients checked, 0 failed
// Raw adjoint: the contributions to u are summed, pairwise, before u's own
// rule (the multiply by 1/2) runs once.
// RAW-LABEL: func.func @three_uses_bwd
// RAW-COUNT-3: arith.addf
// RAW: return

func.func @three_uses(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %half = arith.constant 0.5 : f32
  %hv = tile.splat %half like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %u = arith.mulf %x, %hv : tensor<?x?xf32>
  %sq = arith.mulf %u, %u : tensor<?x?xf32>
  %s = math.sin %u : tensor<?x?xf32>
  %cube = arith.mulf %sq, %u : tensor<?x?xf32>
  %p = arith.addf %cube, %sq : tensor<?x?xf32>
  %y = arith.addf %p, %s : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
