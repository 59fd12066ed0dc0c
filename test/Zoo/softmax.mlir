// Softmax over the last dimension in f32, stabilized by the row maximum:
//   y = exp(x - max(x)) / sum(exp(x - max(x))).
// Softmax does not depend on the shift: the differentiator finds that the
// maximum reaches no result and derives no gradient for it (no tie
// sharing), and the check confirms the gradient numerically. Its backward
// then reads the y the forward returned, not x: y·(g − Σ g·y), as
// PyTorch's hand-written one.
//
// RUN: tile-run %s --gradient-check --args=MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-run %s --gradient-check --policy=save-row-stats --args=MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-opt %s -tile-differentiate -canonicalize -cse | FileCheck %s --check-prefix=BWD
// CHECK: 12 gradients checked, 0 failed
// BWD-LABEL: func.func @softmax_bwd
// BWD-SAME: %[[G:[^:]*]]: tensor<?x?xf32> {tile.cotangent = 0 : i64}
// BWD-SAME: %[[Y:[^:]*]]: tensor<?x?xf32> {tile.forward_result = 0 : i64}
// BWD: %[[GY:.*]] = arith.mulf %[[G]], %[[Y]]
// BWD: tile.reduce sum
// BWD-NOT: {{tile.reduce|math.exp|arith.cmpf}}
// BWD: arith.mulf %{{.*}}, %[[Y]]
// BWD: return {{.*}} : tensor<?x?xf32>

func.func @softmax(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %m = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %shifted = arith.subf %x, %mb : tensor<?x?xf32>
  %e = math.exp %shifted : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.divf %e, %sb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
