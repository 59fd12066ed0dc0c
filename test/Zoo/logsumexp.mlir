// Logsumexp of each row of bf16 x, in f32, stabilized by the row maximum:
//   lse = max(x) + log(sum(exp(x - max(x))))      one value per row.
// lse does not depend on the shift, so the maximum is tile.stop_gradient
// (as in examples/cross_entropy.mlir): the gradient, softmax(x) times the
// row's cotangent, is derived without the maximum's rule.
//
// RUN: tile-run %s --gradient-check --args=MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-run %s --gradient-check --policy=save-row-stats --args=MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-opt %s -tile-differentiate=policy=save-row-stats -canonicalize -cse | FileCheck %s --check-prefix=SAVE
// CHECK: 12 gradients checked, 0 failed
// Saved: the maximum and the sum of exponentials; the backward recomputes
// exp(x - max) in its one pass over the row and reduces nothing.
// SAVE-LABEL: func.func @logsumexp_fwd
// SAVE-SAME: -> (tensor<?xf32>, tensor<?xf32> {tile.saved = 0 : i64}, tensor<?xf32> {tile.saved = 1 : i64})
// SAVE-LABEL: func.func @logsumexp_bwd
// SAVE-NOT: tile.reduce
// SAVE: math.exp
// SAVE-NOT: tile.reduce
// SAVE: return {{.*}} : tensor<?x?xbf16>

func.func @logsumexp(%x: tensor<?x?xbf16>) -> tensor<?xf32>
    attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %max = tile.reduce max %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %m = tile.stop_gradient %max : tensor<?xf32>
  %mb = tile.broadcast %m [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %shifted = arith.subf %xf, %mb : tensor<?x?xf32>
  %e = math.exp %shifted : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %logs = math.log %s : tensor<?xf32>
  %lse = arith.addf %logs, %m : tensor<?xf32>
  return %lse : tensor<?xf32>
}
