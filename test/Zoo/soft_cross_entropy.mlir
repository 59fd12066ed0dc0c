// Cross-entropy of each row of bf16 logits x against a target distribution
// p (soft labels, bf16), in f32:
//   loss = logsumexp(x) - sum(p * x)      one value per row,
// logsumexp stabilized by the row maximum (tile.stop_gradient, as in
// examples/cross_entropy.mlir). p is tile.nograd: the targets are data, and
// only dx = (softmax(x) * sum(p) - p) * g is derived (softmax(x) - p when p
// sums to 1; the check's random p need not).
//
// RUN: tile-run %s --gradient-check --args=MxN,MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-run %s --gradient-check --policy=save-row-stats --args=MxN,MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-opt %s -tile-differentiate -canonicalize -cse | FileCheck %s --check-prefix=BWD
// CHECK: 12 gradients checked, 0 failed
// One gradient, the logits': none for p.
// BWD-LABEL: func.func @soft_cross_entropy_bwd
// BWD-SAME: %{{.*}}: tensor<?x?xbf16> {tile.nograd}, %{{.*}}: tensor<?xf32> {tile.cotangent = 0 : i64}
// BWD-SAME: -> (tensor<?x?xbf16> {tile.gradient = 0 : i64})
// BWD: return {{.*}} : tensor<?x?xbf16>

func.func @soft_cross_entropy(%logits: tensor<?x?xbf16>,
                              %p: tensor<?x?xbf16> {tile.nograd})
    -> tensor<?xf32> attributes {tile.kernel} {
  %x = tile.cast %logits : tensor<?x?xbf16> to tensor<?x?xf32>
  %pf = tile.cast %p : tensor<?x?xbf16> to tensor<?x?xf32>
  %max = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %m = tile.stop_gradient %max : tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %shifted = arith.subf %x, %mb : tensor<?x?xf32>
  %e = math.exp %shifted : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %logs = math.log %s : tensor<?xf32>
  %lse = arith.addf %logs, %m : tensor<?xf32>
  %px = arith.mulf %pf, %x : tensor<?x?xf32>
  %target = tile.reduce sum %px [1] : tensor<?x?xf32> -> tensor<?xf32>
  %loss = arith.subf %lse, %target : tensor<?xf32>
  return %loss : tensor<?xf32>
}
