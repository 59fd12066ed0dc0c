// gpt-oss's clamped SwiGLU, as a mixture of experts' step would run it: x
// [rows, 2H] is the gate g and the up projection u side by side (the
// grouped MLP's layout; gpt-oss stores them interleaved, which a patch would
// reorder once), s [rows] each row's routing weight (f32):
//
//   g' = min(g, 7),  u' = clamp(u, -7, 7)
//   y  = g' * sigmoid(1.702 g') * (u' + 1) * s
//
// The derived backward passes no gradient through a clamped value, and gives
// s's gradient as the row sum of dy * g' * sigmoid(1.702 g') * (u' + 1).
// The inputs span [-10, 10] so that both clamps are hit.
//
// RUN: tile-run %s --gradient-check --args=MxN,M --rows=1,7,13 --widths=2,14,1000,3000 --low=-10 --high=10 | FileCheck %s
// RUN: tile-run %s --gradient-check --policy=save-row-stats --args=MxN,M --rows=1,7,13 --widths=2,14,1000,3000 --low=-10 --high=10 | FileCheck %s
// RUN: tile-opt %s -tile-differentiate -canonicalize -cse -convert-tile-to-gpu | FileCheck %s --check-prefix=GPU
// CHECK: 24 gradients checked, 0 failed
// GPU: gpu.func @clamped_swiglu_bwd(

func.func @clamped_swiglu(%x: tensor<?x?xbf16>, %s: tensor<?xf32>)
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %limit = arith.constant 7.0 : f32
  %nlimit = arith.constant -7.0 : f32
  %alpha = arith.constant 1.702 : f32
  %one = arith.constant 1.0 : f32
  %width = tensor.dim %x, %c1 : tensor<?x?xbf16>
  %h = arith.divui %width, %c2 : index
  %g = tile.slice %x [%c0, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
  %u = tile.slice %x [%h, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
  %gf = tile.cast %g : tensor<?x?xbf16> to tensor<?x?xf32>
  %uf = tile.cast %u : tensor<?x?xbf16> to tensor<?x?xf32>
  %hi = tile.splat %limit like %gf : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %lo = tile.splat %nlimit like %gf : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %gc = arith.minimumf %gf, %hi : tensor<?x?xf32>
  %uh = arith.minimumf %uf, %hi : tensor<?x?xf32>
  %uc = arith.maximumf %uh, %lo : tensor<?x?xf32>
  %a = tile.splat %alpha like %gf : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %ga = arith.mulf %gc, %a : tensor<?x?xf32>
  %sig = tile.sigmoid %ga : tensor<?x?xf32>
  %glu = arith.mulf %gc, %sig : tensor<?x?xf32>
  %ones = tile.splat %one like %gf : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %up1 = arith.addf %uc, %ones : tensor<?x?xf32>
  %prod = arith.mulf %glu, %up1 : tensor<?x?xf32>
  %sb = tile.broadcast %s [1] like %prod
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %prod, %sb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
