// Row reductions whose inputs are ready together share one exchange and,
// over equal widths, one pass over the row (an accumulator each): their
// shuffles interleave, each stores its warp sums into its own slots of the
// row's set, and one barrier serves both. A reduction that reads their
// results exchanges next, in the other set (parity xor 1), with a barrier
// of its own. Two exchanges in a row: the next row starts on the same set,
// so the loop carries its parity unchanged.
// RUN: tile-opt %s -tile-schedule=vector-width=1 -convert-tile-to-gpu | FileCheck %s
//
// CHECK-LABEL: gpu.func @two_then_one(
// CHECK-SAME: workgroup(%[[SH:.*]] : memref<64xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} iter_args(%[[PARITY:.*]] = %c0{{.*}}) -> (index)
// CHECK: %[[FOLDS:.*]]:2 = scf.for {{.*}} -> (f32, f32)
// CHECK: arith.maximumf
// CHECK: arith.addf
// CHECK: scf.yield
// CHECK: gpu.shuffle xor %[[FOLDS]]#0, %c16
// CHECK: gpu.shuffle xor %[[FOLDS]]#1, %c16
// CHECK: %[[SET:.*]] = arith.muli %[[PARITY]], %c32
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[SH]]
// CHECK: memref.store %{{.*}}, %[[SH]]
// CHECK: gpu.barrier
// CHECK-COUNT-16: memref.load %[[SH]]
// CHECK-NOT: gpu.barrier
// CHECK: %[[DFOLD:.*]] = scf.for
// CHECK: gpu.shuffle xor %[[DFOLD]], %c16
// CHECK: %[[OTHER:.*]] = arith.xori %[[PARITY]], %c1
// CHECK: arith.muli %[[OTHER]], %c32
// CHECK: memref.store %{{.*}}, %[[SH]]
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.load %[[SH]]
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield %[[PARITY]] : index
func.func @two_then_one(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %xy = arith.mulf %x, %y : tensor<?x?xf32>
  %s = tile.reduce sum %xy [1] : tensor<?x?xf32> -> tensor<?xf32>
  %m = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %t = arith.mulf %x, %sb : tensor<?x?xf32>
  %u = arith.subf %t, %mb : tensor<?x?xf32>
  %d = tile.reduce sum %u [1] : tensor<?x?xf32> -> tensor<?xf32>
  %db = tile.broadcast %d [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %z = arith.mulf %u, %db : tensor<?x?xf32>
  return %z : tensor<?x?xf32>
}
