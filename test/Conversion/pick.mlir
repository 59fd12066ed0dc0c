// A row sum of select(iota == label, x, 0) (a label's logit) is x at the
// label's column: one element read where the label is a whole number in
// [0, width), 0 otherwise, instead of a pass over the row and an exchange.
// RUN: tile-opt %s -tile-schedule=vector-width=1 -convert-tile-to-gpu | FileCheck %s
//
// CHECK-LABEL: gpu.func @picked(
// CHECK: scf.for {{.*}} -> (index)
// CHECK-NOT: scf.for
// CHECK-NOT: gpu.shuffle
// CHECK: %[[FLOOR:.*]] = math.floor %[[LABEL:.*]] : f32
// CHECK: %[[WHOLE:.*]] = arith.cmpf oeq, %[[LABEL]], %[[FLOOR]]
// CHECK: arith.cmpf oge, %[[LABEL]]
// CHECK: arith.cmpf olt, %[[LABEL]]
// CHECK: arith.fptoui
// CHECK: memref.load
// CHECK: arith.select
// CHECK-NOT: scf.for
// CHECK: gpu.return
func.func @picked(%x: tensor<?x?xf32>, %labels: tensor<?xi64>)
    -> tensor<?xf32> attributes {tile.kernel} {
  %zero = arith.constant 0.0 : f32
  %label = tile.cast %labels : tensor<?xi64> to tensor<?xf32>
  %lb = tile.broadcast %label [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %column = tile.iota like %x : tensor<?x?xf32> -> tensor<?x?xf32>
  %hit = arith.cmpf oeq, %column, %lb : tensor<?x?xf32>
  %zeros = tile.splat %zero like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %picked = arith.select %hit, %x, %zeros : tensor<?x?xi1>, tensor<?x?xf32>
  %target = tile.reduce sum %picked [1] : tensor<?x?xf32> -> tensor<?xf32>
  return %target : tensor<?xf32>
}
