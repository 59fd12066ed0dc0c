// A kernel specialized for a width (the JIT's widths option) uses it as a
// constant: the width parameter is still there, but never read.
// RUN: tile-opt %s -tile-schedule="vector-width=1 row-grid=true" -convert-tile-to-gpu | FileCheck %s
// CHECK-LABEL: gpu.func @exp_rows(
// CHECK-SAME: %[[X:.*]]: memref<1099511627776xf32>, %[[Y:.*]]: memref<1099511627776xf32>, %[[ROWS:.*]]: index, %[[W:.*]]: index
// CHECK: %[[C4096:.*]] = arith.constant 4096 : index
// CHECK: scf.for %{{.*}} = %thread_id_x to %[[C4096]] step %c256
// CHECK-NOT: %[[W]]
// CHECK: gpu.return
func.func @exp_rows(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 4096 : i64}} {
  %0 = math.exp %x : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
