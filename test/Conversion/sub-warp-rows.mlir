// Groups smaller than a warp (rows_per_cta > threads / 32), allowed where
// nothing is reduced across rows. A row reduction's exchange is then the
// group's xor shuffles alone, from half the group's lanes down to one: every
// lane ends with the total, no shared memory, no barrier, so the groups run
// independently. 128 bf16 columns (16 chunks) at 128 threads: 16 rows of 8
// threads, two chunks each (tile-schedule's choice).
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu | FileCheck %s
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu | FileCheck %s --check-prefix=NONE
// RUN: tile-opt %s -tile-schedule | tile-translate --tile-manifest | FileCheck %s --check-prefix=MANIFEST
//
// CHECK-LABEL: gpu.func @row_sum(
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: arith.remui %[[TID]], %[[C8]]
// CHECK: arith.divui %[[TID]], %[[C8]]
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32
// Both bodies (resident, and looped for misaligned buffers) alike.
// NONE-NOT: gpu.barrier
// MANIFEST: ceildiv(rows, 16)
func.func @row_sum(%x: tensor<?x?xbf16>) -> tensor<?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 128 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %s = tile.reduce sum %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  return %s : tensor<?xf32>
}
