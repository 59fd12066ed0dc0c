// Fused residual add and RMSNorm, as in a transformer block, bf16:
//   h = x + alpha * r          (returned: the next residual stream)
//   y = h * rsqrt(mean(h^2) + eps) * w
// Two results, so the backward takes two cotangents; h has three uses.
//
// RUN: tile-run %s --gradient-check --args=MxN,MxN,N,0.5,1e-6 --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-run %s --gradient-check --policy=save-row-stats --args=MxN,MxN,N,0.5,1e-6 --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-opt %s -tile-differentiate -canonicalize -cse | FileCheck %s --check-prefix=BWD
// CHECK: 36 gradients checked, 0 failed
// BWD-LABEL: func.func @residual_rms_norm_bwd
// BWD-SAME: %{{.*}}: tensor<?x?xbf16> {tile.cotangent = 0 : i64}, %{{.*}}: tensor<?x?xbf16> {tile.cotangent = 1 : i64}
// BWD: tile.reduce sum {{.*}} [0] across_rows
// BWD: return {{.*}} : tensor<?x?xbf16>, tensor<?x?xbf16>, tensor<?xbf16>

func.func @residual_rms_norm(%x: tensor<?x?xbf16>, %r: tensor<?x?xbf16>,
                             %w: tensor<?xbf16>, %alpha: f32 {tile.nograd},
                             %eps: f32 {tile.nograd})
    -> (tensor<?x?xbf16>, tensor<?x?xbf16>) attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %rf = tile.cast %r : tensor<?x?xbf16> to tensor<?x?xf32>
  %av = tile.splat %alpha like %rf : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %ar = arith.mulf %av, %rf : tensor<?x?xf32>
  %h = arith.addf %xf, %ar : tensor<?x?xf32>
  %sq = arith.mulf %h, %h : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %epsv = tile.splat %eps like %ms : f32, tensor<?xf32> -> tensor<?xf32>
  %var = arith.addf %ms, %epsv : tensor<?xf32>
  %rstd = math.rsqrt %var : tensor<?xf32>
  %rb = tile.broadcast %rstd [1] like %h
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %hn = arith.mulf %h, %rb : tensor<?x?xf32>
  %wf = tile.cast %w : tensor<?xbf16> to tensor<?xf32>
  %wb = tile.broadcast %wf [0] like %h
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %hn, %wb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  %hb = tile.cast %h : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb, %hb : tensor<?x?xbf16>, tensor<?x?xbf16>
}
