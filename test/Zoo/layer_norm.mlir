// LayerNorm with weight and bias over the last dimension, bf16 storage:
//   y = (x - mean(x)) * rsqrt(var(x) + eps) * w + b.
// dw and db reduce across rows.
//
// RUN: tile-run %s --gradient-check --args=MxN,N,N,1e-5 --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-run %s --gradient-check --policy=save-row-stats --args=MxN,N,N,1e-5 --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-run %s --gradient-check --main-grad --args=MxN,N,N,1e-5 --rows=7 --widths=13 | FileCheck %s --check-prefix=MAIN
// RUN: tile-opt %s -tile-differentiate=policy=save-row-stats -canonicalize -cse | FileCheck %s --check-prefix=SAVE
// CHECK: 36 gradients checked, 0 failed
// MAIN: 3 gradients checked, 0 failed
// The mean and rstd are both per-row values the backward needs.
// SAVE-LABEL: func.func @layer_norm_fwd
// SAVE-SAME: -> (tensor<?x?xbf16>, tensor<?xf32> {tile.saved = 0 : i64}, tensor<?xf32> {tile.saved = 1 : i64})
// SAVE-LABEL: func.func @layer_norm_bwd
// SAVE-SAME: %[[MEAN:arg[0-9]+]]: tensor<?xf32> {tile.saved = 0 : i64}, %[[RSTD:arg[0-9]+]]: tensor<?xf32> {tile.saved = 1 : i64}
// No row statistic is recomputed: the only row reduction left is the
// backward's own Σ(g·(x − mean)).
// SAVE-NOT: tile.reduce mean
// SAVE: tile.broadcast %[[MEAN]] [1]
// SAVE: tile.broadcast %[[RSTD]] [1]
// SAVE-COUNT-2: tile.reduce sum {{.*}} [0] across_rows
// SAVE-NOT: tile.reduce mean
// SAVE: return

func.func @layer_norm(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>,
                      %b: tensor<?xbf16>, %eps: f32 {tile.nograd})
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %mu = tile.reduce mean %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mub = tile.broadcast %mu [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = arith.subf %xf, %mub : tensor<?x?xf32>
  %d2 = arith.mulf %d, %d : tensor<?x?xf32>
  %var = tile.reduce mean %d2 [1] : tensor<?x?xf32> -> tensor<?xf32>
  %epsv = tile.splat %eps like %var : f32, tensor<?xf32> -> tensor<?xf32>
  %ve = arith.addf %var, %epsv : tensor<?xf32>
  %rstd = math.rsqrt %ve : tensor<?xf32>
  %rb = tile.broadcast %rstd [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %xhat = arith.mulf %d, %rb : tensor<?x?xf32>
  %wf = tile.cast %w : tensor<?xbf16> to tensor<?xf32>
  %bf = tile.cast %b : tensor<?xbf16> to tensor<?xf32>
  %wb = tile.broadcast %wf [0] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %bb = tile.broadcast %bf [0] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %scaled = arith.mulf %xhat, %wb : tensor<?x?xf32>
  %y = arith.addf %scaled, %bb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
