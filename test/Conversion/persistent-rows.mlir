// A kernel with only row reductions gets a CTA per row by default; the
// tile-schedule `ctas` option makes it persistent. Then its CTAs walk many
// rows, ptxas is told how many CTAs per SM the grid assumes (528 over 132
// SMs: 4), and the resident body loads one row ahead: the first row's
// chunks before the row loop, each next row's at the top of the loop,
// carried as vectors.
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu | FileCheck %s --check-prefix=ROWS
// RUN: tile-opt %s -tile-schedule=ctas=528 -convert-tile-to-gpu | FileCheck %s --check-prefix=PERSISTENT
// RUN: tile-opt %s -tile-schedule=ctas=528 | tile-translate --tile-manifest | FileCheck %s --check-prefix=MANIFEST
//
// ROWS-LABEL: gpu.func @norm(
// ROWS-NOT: nvvm.minctasm
// ROWS: scf.for {{.*}} iter_args(%{{.*}} = %c0{{.*}}) -> (index)
//
// PERSISTENT-LABEL: gpu.func @norm(
// PERSISTENT-SAME: known_block_size = array<i32: 256, 1, 1>, nvvm.minctasm = 4 : i32
// Four rows of 64 threads per CTA, two chunks of 4 f32 per thread.
// PERSISTENT: %[[FIRST0:.*]] = vector.load %arg0[
// PERSISTENT: %[[FIRST1:.*]] = vector.load %arg0[
// PERSISTENT: scf.for {{.*}} iter_args(%[[CURRENT0:.*]] = %[[FIRST0]], %[[CURRENT1:.*]] = %[[FIRST1]], %{{.*}} = %c0{{.*}}) -> (vector<4xf32>, vector<4xf32>, index)
// PERSISTENT: %[[NEXT0:.*]] = vector.load %arg0[
// PERSISTENT: %[[NEXT1:.*]] = vector.load %arg0[
// PERSISTENT-NOT: vector.load
// PERSISTENT: vector.extract %[[CURRENT0]][0]
// PERSISTENT-NOT: vector.load
// PERSISTENT: gpu.shuffle xor
// PERSISTENT-NOT: vector.load
// PERSISTENT: scf.yield %[[NEXT0]], %[[NEXT1]], %{{.*}} : vector<4xf32>, vector<4xf32>, index
//
// MANIFEST: "grid": "min(ceildiv(rows, 4), 528)"
func.func @norm(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 512 : i64}} {
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %r = math.rsqrt %ms : tensor<?xf32>
  %rb = tile.broadcast %r [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %rb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
