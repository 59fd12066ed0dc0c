// iota == broadcast(label) per element (the one-hot term of a loss's
// backward) compares the lane's column with the label's, as integers: no
// conversion of each column to f32 (a quarter-rate I2F.U64 per element,
// and rounding past 2^24 columns). The label's column is taken once, with
// the whole-number and range tests of a pick; `une` compares with `ne`.
// RUN: tile-opt %s -tile-schedule=vector-width=1 -convert-tile-to-gpu | FileCheck %s
//
// CHECK-LABEL: gpu.func @one_hot(
// CHECK: scf.for %[[COL:.*]] = %thread_id_x
// CHECK: math.floor
// CHECK: arith.fptoui
// CHECK: %[[OFFSET:.*]] = arith.subi %{{.*}}, %[[COL]] : index
// CHECK: %[[SENTINEL:.*]] = arith.select %{{.*}}, %[[OFFSET]], %c-1 : index
// CHECK: arith.cmpi eq, %[[SENTINEL]], %c0
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @off_hot(
// CHECK: arith.cmpi ne
// CHECK: gpu.return
func.func @one_hot(%x: tensor<?x?xf32>, %labels: tensor<?xi64>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %zero = arith.constant 0.0 : f32
  %label = tile.cast %labels : tensor<?xi64> to tensor<?xf32>
  %lb = tile.broadcast %label [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %column = tile.iota like %x : tensor<?x?xf32> -> tensor<?x?xf32>
  %hit = arith.cmpf oeq, %column, %lb : tensor<?x?xf32>
  %zeros = tile.splat %zero like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.select %hit, %x, %zeros : tensor<?x?xi1>, tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

func.func @off_hot(%x: tensor<?x?xf32>, %labels: tensor<?xi64>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %zero = arith.constant 0.0 : f32
  %label = tile.cast %labels : tensor<?xi64> to tensor<?xf32>
  %lb = tile.broadcast %label [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %column = tile.iota like %x : tensor<?x?xf32> -> tensor<?x?xf32>
  %miss = arith.cmpf une, %lb, %column : tensor<?x?xf32>
  %zeros = tile.splat %zero like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.select %miss, %x, %zeros : tensor<?x?xi1>, tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
