// A resident body: with a specialized width every column loop is over, and
// at most four vector chunks per thread (or more, up to 128 values), the row kernel unrolls its column
// loops. Each thread loads its chunks of the row once, before any math
// (512 f32 columns: 128 chunks of 4; four rows of 64 threads per CTA, two
// chunks each); the row reduction and the output reuse those values; the
// cross-row partials ride the row loop in registers and reach the
// workspace once per CTA, the groups added in order. The grid is
// persistent, so the loads are pipelined: the first row's before the row
// loop, and each row's loads of the next row come before its math, carried
// to the next iteration. Misaligned buffers take the looped body instead.
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu | FileCheck %s
//
// CHECK-LABEL: gpu.func @norm_and_colsum(
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>, nvvm.minctasm = 2 : i32
// CHECK: scf.if %[[ALIGNED:.*]] {
// CHECK: %[[FIRST0:.*]] = vector.load %[[X:arg0]][
// CHECK: %[[FIRST1:.*]] = vector.load %[[X]][
// CHECK: %[[PARTIALS:.*]]:11 = scf.for %{{.*}} iter_args({{.*}}, %[[CUR0:.*]] = %[[FIRST0]], %[[CUR1:.*]] = %[[FIRST1]], %[[PARITY:.*]] = %c0{{.*}})
// CHECK-NOT: scf.for
// CHECK: %[[NEXT0:.*]] = vector.load %[[X]][
// CHECK-NOT: scf.for
// CHECK: %[[NEXT1:.*]] = vector.load %[[X]][
// CHECK-NOT: vector.load
// CHECK: vector.extract %[[CUR0]][0]
// CHECK-NOT: vector.load
// CHECK-NOT: scf.for
// CHECK: gpu.shuffle xor
// CHECK-NOT: vector.load
// CHECK-NOT: scf.for
// CHECK: math.rsqrt
// CHECK-NOT: vector.load
// CHECK-NOT: scf.for
// CHECK: vector.store %{{.*}}, %arg1[
// CHECK-NOT: vector.load
// CHECK-NOT: scf.for
// CHECK: vector.store %{{.*}}, %arg1[
// CHECK: %[[NEXTPARITY:.*]] = arith.xori %[[PARITY]]
// CHECK: scf.yield {{.*}}, %[[NEXT0]], %[[NEXT1]], %[[NEXTPARITY]] :
// Group 0 stores its partials, then each next group adds its own.
// CHECK: vector.store %{{.*}}, %[[WS:arg6]][
// CHECK: vector.store %{{.*}}, %[[WS]][
// CHECK: gpu.barrier
// CHECK: vector.load %[[WS]][
// CHECK: arith.addf %{{.*}}, %[[PARTIALS]]#0
// CHECK: } else {
// CHECK: scf.for
// CHECK-LABEL: gpu.func @norm_and_colsum_finalize(
//
// Not resident: an unspecialized width (the loops stay), or more than four
// chunks per thread and more than 128 values of them (64 chunks of 4).
// CHECK-LABEL: gpu.func @unspecialized(
// CHECK-NOT: iter_args(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}
// CHECK: scf.for {{.*}} iter_args
// CHECK-LABEL: gpu.func @too_wide(
// CHECK-NOT: scf.if
// CHECK: scf.for %{{.*}} = %block_id_x
// CHECK: scf.for %{{.*}} = %thread_id_x {{.*}} iter_args
//
// Resident at eight chunks: one input of four lanes is 32 values a thread.
// The eight loads of the row come first, in the row loop, with no column
// loop around them.
// CHECK-LABEL: gpu.func @eight_chunks(
// CHECK: scf.if
// CHECK-NOT: scf.for
// CHECK: scf.for %{{.*}} = %block_id_x {{.*}} iter_args
// CHECK-NOT: scf.for
// CHECK-COUNT-8: vector.load %arg0
// CHECK-NOT: vector.load
// CHECK: gpu.shuffle xor
// CHECK: } else {
func.func @norm_and_colsum(%x: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>)
    attributes {tile.kernel, tile.specialize = {w0 = 512 : i64}} {
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %r = math.rsqrt %ms : tensor<?xf32>
  %rb = tile.broadcast %r [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %rb : tensor<?x?xf32>
  %c = tile.reduce sum %y [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %y, %c : tensor<?x?xf32>, tensor<?xf32>
}

func.func @unspecialized(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %rb = tile.broadcast %ms [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %rb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

func.func @too_wide(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 65536 : i64},
                tile.schedule = {grid = "rows", threads = 256 : i64,
                                 vector_width = 4 : i64}} {
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %rb = tile.broadcast %ms [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %rb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

func.func @eight_chunks(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 8192 : i64},
                tile.schedule = {grid = "rows", threads = 256 : i64,
                                 vector_width = 4 : i64}} {
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %rb = tile.broadcast %ms [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %rb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
