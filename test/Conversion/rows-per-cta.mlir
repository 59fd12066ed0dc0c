// Several rows per CTA: the CTA splits into groups of whole warps, each on
// its own row; every group takes every step of the row loop (the row
// reduction's barriers need the whole CTA), a group past the last row works
// on the last row but writes nothing, and each group owns a scratch row of
// partials, added in group order into the CTA's row after the last row.
// RUN: tile-opt %s -tile-schedule="rows-per-cta=4 vector-width=1" -convert-tile-to-gpu | FileCheck %s
// RUN: tile-opt %s -tile-schedule="rows-per-cta=4" | tile-translate --tile-manifest | FileCheck %s --check-prefix=MANIFEST
// RUN: %expect-error tile-opt -tile-schedule="rows-per-cta=3" %s
//
// CHECK-LABEL: gpu.func @norm_and_colsum(
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[MEMBER:.*]] = arith.remui %[[TID]], %[[C64]]
// CHECK: %[[GROUP:.*]] = arith.divui %[[TID]], %[[C64]]
// The group's own row of partials is zeroed first.
// CHECK: scf.for %{{.*}} = %[[MEMBER]] to %{{.*}} step %[[C64]]
// CHECK: scf.for %[[BLOCK:.*]] = %{{.*}} to %[[ROWS:.*]] step %{{.*}} iter_args(%[[PARITY:.*]] = %c0{{.*}}) -> (index) {
// CHECK: %[[MINE:.*]] = arith.addi %[[BLOCK]], %[[GROUP]]
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %[[MINE]], %[[ROWS]]
// CHECK: arith.minui %[[MINE]]
// CHECK: scf.for %{{.*}} = %[[MEMBER]] to %{{.*}} step %[[C64]]
// Two warps per group: this group's two slots of shared memory, in the set
// of the row's parity.
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: %[[SET:.*]] = arith.muli %[[PARITY]], %c32
// CHECK: gpu.barrier
// CHECK: %[[GROUPWARPS:.*]] = arith.muli %[[GROUP]], %c2
// CHECK: %[[SLOTS:.*]] = arith.addi %[[SET]], %[[GROUPWARPS]]
// CHECK-COUNT-2: memref.load %{{.*}}[%{{.*}}] : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: gpu.barrier
// CHECK: scf.if %[[VALID]] {
// CHECK: memref.store
// After the last row: group 0 adds the four scratch rows in order.
// CHECK: gpu.barrier
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[GROUP]], %{{.*}}
// CHECK: scf.if %[[FIRST]] {
// CHECK: scf.for
// CHECK-COUNT-4: memref.load %[[WS:arg[0-9]+]][
// CHECK: memref.store %{{.*}}, %[[WS]][
// CHECK-LABEL: gpu.func @norm_and_colsum_finalize(
// MANIFEST: "ctas": "min(ceildiv(rows, 4), 264)",
// MANIFEST: "workspace_f32_elements": "ctas * w0 + ctas * 4 * w0"
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
