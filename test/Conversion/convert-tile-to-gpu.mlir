// RUN: tile-opt %s -tile-schedule="vector-width=1 row-grid=true" -convert-tile-to-gpu | FileCheck %s
// RUN: tile-opt %s -tile-schedule="threads=128 row-grid=true" -convert-tile-to-gpu | FileCheck %s --check-prefix=T128
// RUN: tile-opt %s -tile-schedule=row-grid=true -convert-tile-to-gpu | FileCheck %s --check-prefix=VEC

// Vectorized (the default for bf16: 8 columns, 16 bytes): a uniform test
// that every buffer is 16-byte aligned and every width a multiple of 8,
// a loop over groups with aligned vector accesses, and a scalar loop for
// the tail (or for the whole row when the test fails).
// VEC-LABEL: gpu.func @scale_add(
// VEC-COUNT-4: memref.extract_aligned_pointer_as_index
// VEC: arith.andi
// VEC: scf.for
// VEC: scf.if %[[OK:.*]] {
// VEC: scf.for
// VEC: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xbf16>, vector<8xbf16>
// VEC: vector.store %{{.*}} {alignment = 16 : i64} : memref<1099511627776xbf16>, vector<8xbf16>
// VEC: %[[TAIL:.*]] = arith.select %[[OK]]
// VEC: %[[START:.*]] = arith.addi %[[TAIL]], %thread_id_x
// VEC: scf.for %{{.*}} = %[[START]] to
// VEC: memref.load
// VEC: memref.store

// An elementwise kernel: one row kernel, rows over CTAs, threads striding
// over the columns; bf16 loaded, computed in f32, stored as bf16.
// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @tile_kernels
// CHECK-LABEL: gpu.func @scale_add(
// CHECK-SAME: %[[X:.*]]: memref<1099511627776xbf16>, %[[Y:.*]]: memref<1099511627776xbf16>, %[[S:.*]]: f32, %[[OUT:.*]]: memref<1099511627776xbf16>,
// CHECK-SAME: %[[ROWS:.*]]: index, %[[WX:.*]]: index, %[[WY:.*]]: index, %[[CTAS:.*]]: index, %[[WS:.*]]: memref<1099511627776xf32>)
// CHECK-SAME: kernel {
// No finalize follows it, so it does not let one launch early.
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK: %[[GRID:.*]] = gpu.grid_dim x
// CHECK: scf.for %[[ROW:.*]] = %[[BID]] to %[[ROWS]] step %[[GRID]]
// CHECK: scf.for %[[COL:.*]] = %[[TID]] to %[[WX]] step %c256
// CHECK: memref.load %[[X]]
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: arith.mulf
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: memref.store {{.*}}, %[[OUT]]
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
// T128: step %c128
func.func @scale_add(%x: tensor<?x?xbf16>, %y: tensor<?x?xbf16>,
                     %s: f32 {tile.nograd}) -> tensor<?x?xbf16>
    attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %yf = tile.cast %y : tensor<?x?xbf16> to tensor<?x?xf32>
  %sv = tile.splat %s like %xf : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %p = arith.mulf %xf, %sv : tensor<?x?xf32>
  %q = arith.addf %p, %yf : tensor<?x?xf32>
  %qb = tile.cast %q : tensor<?x?xf32> to tensor<?x?xbf16>
  return %qb : tensor<?x?xbf16>
}

// A row reduction: a first pass over the row accumulates per thread, warp
// shuffles and shared memory combine the threads, and the result is used by
// the second pass; a cross-row reduction writes per-CTA partials and gets a
// finalize kernel that sums them in CTA order.
// The shared slots come in two sets of 4 reductions x 8 warps; a row's
// exchange takes the set its parity (carried by the row loop) names, so
// that it needs one barrier: the next row's exchange writes the other set.
// CHECK-LABEL: gpu.func @norm_and_colsum(
// CHECK-SAME: workgroup(%[[SH:.*]] : memref<64xf32, #gpu.address_space<workgroup>>)
// Partials zeroed first, in this CTA's own row of the workspace.
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %[[WS:.*]][
// CHECK: scf.for %[[ROW:.*]] = {{.*}} iter_args(%[[PARITY:.*]] = %c0{{.*}}) -> (index)
// CHECK: %[[SUM:.*]] = scf.for {{.*}} iter_args
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: %[[SET:.*]] = arith.muli %[[PARITY]], %c32
// CHECK: memref.store %{{.*}}, %[[SH]]
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.load %[[SH]]
// CHECK-NOT: gpu.barrier
// CHECK: math.rsqrt
// CHECK: scf.for
// CHECK: memref.load %[[WS]]
// CHECK: memref.store %{{.*}}, %[[WS]]
// One exchange in the row: the next row starts on the other set.
// CHECK: %[[NEXT:.*]] = arith.xori %[[PARITY]], %c1
// CHECK: scf.yield %[[NEXT]] : index
// The finalize: 32 columns per CTA, a warp's lanes on the columns; warp w
// adds partial rows w, w + 8, ... (its share of the 264 partial rows, 33,
// in one step, loaded first, the rows past the last not added) and the
// warps' sums meet in shared memory, added in warp order; warp 0 stores.
// CHECK-LABEL: gpu.func @norm_and_colsum_finalize(
// CHECK-SAME: workgroup(%[[FSH:.*]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK: gpu.block_id x
// Launched early, it waits for the row kernel before its first load.
// CHECK-NOT: memref.load
// CHECK: nvvm.griddepcontrol wait
// CHECK: %[[WARP:.*]] = arith.divui %{{.*}}, %c32
// CHECK: scf.for %{{.*}} = %[[WARP]] to %{{.*}} step %c264{{.*}} iter_args
// CHECK-COUNT-33: memref.load
// CHECK-NOT: memref.load
// CHECK: arith.addf
// CHECK-COUNT-32: arith.select
// CHECK: memref.store %{{.*}}, %[[FSH]]
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.load %[[FSH]]
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.store
func.func @norm_and_colsum(%x: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>) attributes {tile.kernel} {
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %r = math.rsqrt %ms : tensor<?xf32>
  %rb = tile.broadcast %r [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %rb : tensor<?x?xf32>
  %c = tile.reduce sum %y [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %y, %c : tensor<?x?xf32>, tensor<?xf32>
}
