// After a resident row's exchange, the last pass widens 16-bit inputs
// again from the loaded words instead of reusing the first pass's f32
// lanes, so that the words (half the registers) are what stays live
// across the exchange. Each lane is cut out of its word after an xor with
// a zero made from the row count's sign, which neither LLVM nor ptxas can
// fold: without it both merge the cut into the first extraction. A bf16
// lane is widened from its word in the first pass too (a shift or a mask).
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu | FileCheck %s
//
// CHECK-LABEL: gpu.func @norm_bf16(
// CHECK-SAME: %[[ROWS:arg2]]: index
// CHECK: %[[SIGN:.*]] = arith.shrsi %[[ROWS]], %c63
// CHECK: %[[ZERO:.*]] = arith.index_cast %[[SIGN]] : index to i32
// CHECK: scf.if
// CHECK: %[[V:.*]] = vector.load %arg0[{{.*}} vector<8xbf16>
// CHECK-NEXT: %[[WORDS:.*]] = vector.bitcast %[[V]] : vector<8xbf16> to vector<4xi32>
// The first pass: a bf16 lane is the top half of an f32, so lane 0 (the
// low half of word 0) is shifted up and lane 1 masked in place; no xor.
// CHECK: %[[F0:.*]] = vector.extract %[[WORDS]][0]
// CHECK: %[[G0:.*]] = arith.shli %[[F0]], %c16
// CHECK-NEXT: arith.bitcast %[[G0]] : i32 to f32
// CHECK: %[[F1:.*]] = vector.extract %[[WORDS]][0]
// CHECK: %[[G1:.*]] = arith.andi %[[F1]], %c-65536
// CHECK-NEXT: arith.bitcast %[[G1]] : i32 to f32
// CHECK-NOT: arith.xori {{.*}} : i32
// CHECK: gpu.shuffle xor
// CHECK-NOT: arith.xori {{.*}} : i32
// CHECK: gpu.barrier
// CHECK: math.rsqrt
// The last pass: the same cuts after the xor with the opaque zero.
// CHECK: %[[W0:.*]] = vector.extract %[[WORDS]][0]
// CHECK: %[[X0:.*]] = arith.xori %[[W0]], %[[ZERO]] : i32
// CHECK: %[[S0:.*]] = arith.shli %[[X0]], %c16
// CHECK: arith.bitcast %[[S0]] : i32 to f32
// CHECK: %[[W1:.*]] = vector.extract %[[WORDS]][0]
// CHECK: %[[X1:.*]] = arith.xori %[[W1]], %[[ZERO]] : i32
// CHECK: %[[M1:.*]] = arith.andi %[[X1]], %c-65536
// CHECK: arith.bitcast %[[M1]] : i32 to f32
// CHECK-NOT: arith.extf
// CHECK: vector.store
// CHECK: } else {
//
// f16 is cut out of the word as a half and converted.
// CHECK-LABEL: gpu.func @norm_f16(
// CHECK: %[[V:.*]] = vector.load %arg0[{{.*}} vector<8xf16>
// CHECK-NEXT: %[[WORDS:.*]] = vector.bitcast %[[V]] : vector<8xf16> to vector<4xi32>
// CHECK: %[[L0:.*]] = vector.extract %[[V]][0]
// CHECK: arith.extf %[[L0]] : f16 to f32
// CHECK: gpu.barrier
// CHECK: %[[W0:.*]] = vector.extract %[[WORDS]][0]
// CHECK: %[[X0:.*]] = arith.xori %[[W0]], %{{.*}} : i32
// CHECK: %[[H0:.*]] = arith.trunci %[[X0]] : i32 to i16
// CHECK: %[[B0:.*]] = arith.bitcast %[[H0]] : i16 to f16
// CHECK: arith.extf %[[B0]] : f16 to f32
// CHECK: %[[W1:.*]] = vector.extract %[[WORDS]][0]
// CHECK: %[[X1:.*]] = arith.xori %[[W1]], %{{.*}} : i32
// CHECK: %[[S1:.*]] = arith.shrui %[[X1]], %c16
// CHECK: %[[H1:.*]] = arith.trunci %[[S1]] : i32 to i16
// CHECK: arith.bitcast %[[H1]] : i16 to f16
// CHECK-NOT: arith.extf %[[L0]]
// CHECK: vector.store
// CHECK: } else {
//
// f32 inputs have nothing to widen.
// CHECK-LABEL: gpu.func @norm_f32(
// CHECK-NOT: vector.bitcast
// CHECK-NOT: arith.xori {{.*}} : i32
// CHECK: gpu.return
//
// A pipelined body (persistent grid, at most two chunks) already carries
// the next row's words; it keeps the first pass's lanes (no xor).
// CHECK-LABEL: gpu.func @norm_bf16_persistent(
// CHECK-NOT: arith.xori {{.*}} : i32
// CHECK: gpu.return
//
// Where the body would still keep more than kMaxHeldRegisters live across
// the exchange (eight f32 chunks of x, g and w and a partial: 128), the
// last pass loads the column input w again (L2 hits) instead of keeping
// it. With four chunks a thread (64) it keeps w.
// CHECK-LABEL: gpu.func @reload_weights(
// CHECK-COUNT-8: vector.load %[[W:arg2]][
// CHECK: gpu.barrier
// CHECK: math.rsqrt
// CHECK-COUNT-8: vector.load %[[W]][
// CHECK: } else {
// CHECK-LABEL: gpu.func @keep_weights(
// CHECK-COUNT-4: vector.load %[[W:arg2]][
// CHECK: math.rsqrt
// CHECK-NOT: vector.load
// CHECK: vector.store

func.func @norm_bf16(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel, tile.specialize = {w0 = 2048 : i64},
                tile.schedule = {grid = "rows", threads = 256 : i64,
                                 vector_width = 8 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %sq = arith.mulf %xf, %xf : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %r = math.rsqrt %ms : tensor<?xf32>
  %rb = tile.broadcast %r [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %xf, %rb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}

func.func @norm_f16(%x: tensor<?x?xf16>) -> tensor<?x?xf16>
    attributes {tile.kernel, tile.specialize = {w0 = 2048 : i64},
                tile.schedule = {grid = "rows", threads = 256 : i64,
                                 vector_width = 8 : i64}} {
  %xf = tile.cast %x : tensor<?x?xf16> to tensor<?x?xf32>
  %sq = arith.mulf %xf, %xf : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %r = math.rsqrt %ms : tensor<?xf32>
  %rb = tile.broadcast %r [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %xf, %rb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xf16>
  return %yb : tensor<?x?xf16>
}

func.func @norm_f32(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 1024 : i64},
                tile.schedule = {grid = "rows", threads = 256 : i64,
                                 vector_width = 4 : i64}} {
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %r = math.rsqrt %ms : tensor<?xf32>
  %rb = tile.broadcast %r [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %rb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

func.func @norm_bf16_persistent(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel, tile.specialize = {w0 = 2048 : i64},
                tile.schedule = {grid = "persistent", ctas = 264 : i64,
                                 threads = 256 : i64, vector_width = 8 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %sq = arith.mulf %xf, %xf : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %r = math.rsqrt %ms : tensor<?xf32>
  %rb = tile.broadcast %r [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %xf, %rb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}

func.func @reload_weights(%x: tensor<?x?xf32>, %g: tensor<?x?xf32>, %w: tensor<?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>)
    attributes {tile.kernel, tile.specialize = {w0 = 16384 : i64},
                tile.schedule = {grid = "persistent", ctas = 132 : i64,
                                 threads = 512 : i64, vector_width = 4 : i64}} {
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %r = math.rsqrt %ms : tensor<?xf32>
  %rb = tile.broadcast %r [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %wb = tile.broadcast %w [0] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %xw = arith.mulf %x, %wb : tensor<?x?xf32>
  %xg = arith.mulf %xw, %g : tensor<?x?xf32>
  %y = arith.mulf %xg, %rb : tensor<?x?xf32>
  %c = tile.reduce sum %xg [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %y, %c : tensor<?x?xf32>, tensor<?xf32>
}

func.func @keep_weights(%x: tensor<?x?xf32>, %g: tensor<?x?xf32>, %w: tensor<?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>)
    attributes {tile.kernel, tile.specialize = {w0 = 16384 : i64},
                tile.schedule = {grid = "persistent", ctas = 66 : i64,
                                 threads = 1024 : i64, vector_width = 4 : i64}} {
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %r = math.rsqrt %ms : tensor<?xf32>
  %rb = tile.broadcast %r [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %wb = tile.broadcast %w [0] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %xw = arith.mulf %x, %wb : tensor<?x?xf32>
  %xg = arith.mulf %xw, %g : tensor<?x?xf32>
  %y = arith.mulf %xg, %rb : tensor<?x?xf32>
  %c = tile.reduce sum %xg [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %y, %c : tensor<?x?xf32>, tensor<?xf32>
}
