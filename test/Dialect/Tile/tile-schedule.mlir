// RUN: tile-opt %s -tile-schedule | FileCheck %s
// RUN: tile-opt %s -tile-schedule="threads=512 ctas=132" | FileCheck %s --check-prefix=OVERRIDE
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: tile-opt %s -tile-schedule=vector-width=1 -convert-tile-to-gpu | FileCheck %s --check-prefix=SCALAR
// RUN: tile-opt %s -tile-schedule=row-grid=true | FileCheck %s --check-prefix=ROWGRID
// RUN: tile-opt %s -tile-schedule=rows-per-cta=2 | FileCheck %s --check-prefix=ROWS
// RUN: tile-opt %s -tile-schedule=fold-finalize | FileCheck %s --check-prefix=FOLDED
// RUN: tile-opt %s -tile-schedule=fold-finalize -convert-tile-to-gpu | FileCheck %s --check-prefix=FOLDGPU

// An element grid for a purely elementwise kernel; a persistent grid with
// cross-row work; a schedule written by hand stays unless an option
// overrides it. row-grid gives the elementwise kernel one CTA per row.
// CHECK-LABEL: func.func @rowwise
// CHECK-SAME: tile.schedule = {grid = "elements", threads = 128 : i64, vector_width = 4 : i64}
// CHECK-LABEL: func.func @colsum
// CHECK-SAME: tile.schedule = {ctas = 264 : i64, ctas_per_sm = 2 : i64, grid = "persistent", threads = 256 : i64, vector_width = 4 : i64}
// CHECK-LABEL: func.func @chosen
// CHECK-SAME: tile.schedule = {grid = "rows", threads = 64 : i64, vector_width = 4 : i64}
// OVERRIDE-LABEL: func.func @rowwise
// OVERRIDE-SAME: tile.schedule = {grid = "elements", threads = 512 : i64, vector_width = 4 : i64}
// OVERRIDE-LABEL: func.func @colsum
// OVERRIDE-SAME: tile.schedule = {ctas = 132 : i64, ctas_per_sm = 1 : i64, grid = "persistent", threads = 512 : i64, vector_width = 4 : i64}
// OVERRIDE-LABEL: func.func @chosen
// OVERRIDE-SAME: threads = 512 : i64
// rows-per-cta applies to the kernels with rows: not to an element grid.
// ROWS-LABEL: func.func @rowwise
// ROWS-SAME: tile.schedule = {grid = "elements", threads = 128 : i64, vector_width = 4 : i64}
// ROWS-LABEL: func.func @colsum
// ROWS-SAME: rows_per_cta = 2 : i64
// ROWS-LABEL: func.func @chosen
// ROWS-SAME: tile.schedule = {grid = "rows", rows_per_cta = 2 : i64, threads = 64 : i64, vector_width = 4 : i64}
// fold-finalize marks the persistent kernel only.
// FOLDED-LABEL: func.func @rowwise
// FOLDED-SAME: tile.schedule = {grid = "elements", threads = 128 : i64, vector_width = 4 : i64}
// FOLDED-LABEL: func.func @colsum
// FOLDED-SAME: tile.schedule = {ctas = 264 : i64, ctas_per_sm = 2 : i64, finalize = "folded", grid = "persistent", threads = 256 : i64, vector_width = 4 : i64}
// Folded, the row kernel takes the arrivals counter; a CTA past the partial
// rows (no rows at all) skips the row body; each CTA takes a ticket after a
// release fence, the last ones poll with acquire loads until every CTA has
// arrived, sum 32-column slices and then take a second ticket (the last of
// them resets the counter); no second kernel.
// FOLDGPU-LABEL: gpu.func @colsum(
// FOLDGPU-SAME: memref<1099511627776xi32>
// FOLDGPU: arith.cmpi ult, %block_id_x
// FOLDGPU: step %c256
// FOLDGPU: llvm.fence syncscope("device") release
// FOLDGPU: llvm.atomicrmw add {{.*}} syncscope("device") monotonic
// FOLDGPU: scf.while
// FOLDGPU: llvm.load {{.*}} atomic syncscope("device") acquire
// FOLDGPU: llvm.atomicrmw add {{.*}} syncscope("device") monotonic
// FOLDGPU: llvm.store {{.*}} atomic syncscope("device") monotonic
// FOLDGPU-NOT: gpu.func @colsum_finalize(
// ROWGRID-LABEL: func.func @rowwise
// ROWGRID-SAME: tile.schedule = {grid = "rows", threads = 256 : i64, vector_width = 4 : i64}
// ROWGRID-LABEL: func.func @chosen
// ROWGRID-SAME: tile.schedule = {grid = "rows", threads = 64 : i64, vector_width = 4 : i64}
// A thread of the element grid takes four f32 (16 bytes) where its chunk
// is whole and the buffers aligned, and a scalar loop otherwise.
// GPU-LABEL: gpu.func @rowwise(
// GPU: memref.extract_aligned_pointer_as_index
// GPU: arith.muli %block_id_x, %c128
// GPU: arith.cmpi ule
// GPU: scf.if
// GPU: vector.load {{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// GPU: vector.store {{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// GPU: } else {
// GPU: arith.minui
// GPU: memref.load
// GPU-LABEL: gpu.func @colsum(
// GPU: step %c256
// GPU-LABEL: gpu.func @colsum_finalize(
// GPU-LABEL: gpu.func @chosen(
// GPU: step %c64
func.func @rowwise(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %0 = math.exp %x : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @colsum(%x: tensor<?x?xf32>) -> tensor<?xf32>
    attributes {tile.kernel} {
  %0 = tile.reduce sum %x [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @chosen(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel, tile.schedule = {grid = "rows", threads = 64 : i64}} {
  %0 = math.exp %x : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
// SCALAR-NOT: vector.load
