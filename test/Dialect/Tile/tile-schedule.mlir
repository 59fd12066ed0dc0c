// RUN: tile-opt %s -tile-schedule | FileCheck %s
// RUN: tile-opt %s -tile-schedule="threads=512 ctas=132" | FileCheck %s --check-prefix=OVERRIDE
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: tile-opt %s -tile-schedule=vector-width=1 -convert-tile-to-gpu | FileCheck %s --check-prefix=SCALAR

// One CTA per row without cross-row work; a persistent grid with it; a
// schedule written by hand stays unless an option overrides it.
// CHECK-LABEL: func.func @rowwise
// CHECK-SAME: tile.schedule = {grid = "rows", threads = 256 : i64, vector_width = 4 : i64}
// CHECK-LABEL: func.func @colsum
// CHECK-SAME: tile.schedule = {ctas = 264 : i64, grid = "persistent", threads = 256 : i64, vector_width = 4 : i64}
// CHECK-LABEL: func.func @chosen
// CHECK-SAME: tile.schedule = {grid = "rows", threads = 64 : i64, vector_width = 4 : i64}
// OVERRIDE-LABEL: func.func @rowwise
// OVERRIDE-SAME: tile.schedule = {grid = "rows", threads = 512 : i64, vector_width = 4 : i64}
// OVERRIDE-LABEL: func.func @colsum
// OVERRIDE-SAME: tile.schedule = {ctas = 132 : i64, grid = "persistent", threads = 512 : i64, vector_width = 4 : i64}
// OVERRIDE-LABEL: func.func @chosen
// OVERRIDE-SAME: threads = 512 : i64
// f32 rows go four columns (16 bytes) at a time where aligned, and a
// scalar loop takes the tail or a misaligned row.
// GPU-LABEL: gpu.func @rowwise(
// GPU: memref.extract_aligned_pointer_as_index
// GPU: scf.if
// GPU: vector.load {{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// GPU: vector.store {{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// GPU: arith.select
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
