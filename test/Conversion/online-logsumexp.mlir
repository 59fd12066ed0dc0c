// A row sum of exp(x - max(x)) folds in the pass of its max ("online"):
// each thread keeps its running max and rescales its sum by
// exp(old - new) when the max grows; after the max's exchange each thread
// rescales its sum to the row's max and a second exchange adds the sums.
// The row is read once, not twice. Only where the kernel has no resident
// body (a resident row is read once anyway, and its looped twin must give
// the same bits): here the width is dynamic.
// RUN: tile-opt %s -tile-schedule=vector-width=1 -convert-tile-to-gpu | FileCheck %s
//
// CHECK-LABEL: gpu.func @logsumexp(
// CHECK: scf.for {{.*}} -> (index)
// CHECK: %[[FOLDS:.*]]:2 = scf.for {{.*}} -> (f32, f32)
// CHECK: %[[NEW:.*]] = arith.maximumf
// CHECK: arith.cmpf oeq, %{{.*}}, %[[NEW]]
// CHECK: math.exp
// CHECK: math.exp
// CHECK: scf.yield %[[NEW]]
// CHECK: gpu.shuffle xor %[[FOLDS]]#0, %c16
// CHECK: gpu.barrier
// CHECK: %[[SCALE:.*]] = arith.select
// CHECK: %[[OWN:.*]] = arith.mulf %[[FOLDS]]#1, %[[SCALE]]
// CHECK: gpu.shuffle xor %[[OWN]], %c16
// CHECK: gpu.barrier
// CHECK-NOT: scf.for
// CHECK: math.log
func.func @logsumexp(%x: tensor<?x?xf32>) -> tensor<?xf32>
    attributes {tile.kernel} {
  %max = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %m = tile.stop_gradient %max : tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %shifted = arith.subf %x, %mb : tensor<?x?xf32>
  %e = math.exp %shifted : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %logs = math.log %s : tensor<?xf32>
  %lse = arith.addf %logs, %m : tensor<?xf32>
  return %lse : tensor<?xf32>
}
