// RUN: tile-opt %tile_src/examples/swiglu.mlir -tile-differentiate -cse -tile-schedule -convert-tile-to-gpu -canonicalize | FileCheck %s
// RUN: tile-opt %s -tile-schedule=vector-width=1 -convert-tile-to-gpu -canonicalize | FileCheck %s --check-prefix=SCALAR
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu -canonicalize | FileCheck %s --check-prefix=TWOWIDTHS

// A purely elementwise kernel (SwiGLU's backward: casts, elementwise ops, a
// splat) takes an element grid: no row loop, thread t of CTA c takes the
// eight bf16 at flat index (128c + t)·8 of every buffer. It goes by 16-byte
// vectors where the chunk is whole (its end ≤ rows · W) and every buffer
// aligned, else by a scalar loop to min(end, rows · W). All three inputs
// are loaded before either gradient is stored (in place, da may be a's
// buffer).
// CHECK-LABEL: gpu.func @swiglu_bwd(
// CHECK-SAME: %[[A:[^:]*]]: memref<1099511627776xbf16>, %[[B:[^:]*]]: memref<1099511627776xbf16>, %[[DC:[^:]*]]: memref<1099511627776xbf16>, %[[DA:[^:]*]]: memref<1099511627776xbf16>, %[[DB:[^:]*]]: memref<1099511627776xbf16>, %[[ROWS:[^:]*]]: index
// CHECK-NOT: scf.for
// CHECK: %[[TOTAL:.*]] = arith.muli %[[ROWS]], %{{.*}} : index
// CHECK: %[[CTA:.*]] = arith.muli %block_id_x, %c128 : index
// CHECK: %[[THREAD:.*]] = arith.addi %[[CTA]], %thread_id_x : index
// CHECK: %[[FIRST:.*]] = arith.muli %[[THREAD]], %c8 : index
// CHECK: %[[PAST:.*]] = arith.addi %[[FIRST]], %c8 : index
// CHECK: %[[WHOLE:.*]] = arith.cmpi ule, %[[PAST]], %[[TOTAL]] : index
// CHECK: %[[FAST:.*]] = arith.andi %{{.*}}, %[[WHOLE]] : i1
// CHECK: scf.if %[[FAST]] {
// CHECK: vector.load %[[A]][%[[FIRST]]] {alignment = 16 : i64} : memref<1099511627776xbf16>, vector<8xbf16>
// CHECK: vector.load %[[B]][%[[FIRST]]]
// CHECK: vector.load %[[DC]][%[[FIRST]]]
// CHECK-NOT: vector.load
// CHECK: vector.store %{{.*}}, %[[DA]][%[[FIRST]]]
// CHECK: vector.store %{{.*}}, %[[DB]][%[[FIRST]]]
// CHECK: } else {
// CHECK: %[[END:.*]] = arith.minui %[[PAST]], %[[TOTAL]] : index
// CHECK: scf.for %[[I:.*]] = %[[FIRST]] to %[[END]] step %c1 {
// CHECK-COUNT-3: memref.load
// CHECK-NOT: memref.load
// CHECK: memref.store %{{.*}}, %[[DA]][%[[I]]]
// CHECK: memref.store %{{.*}}, %[[DB]][%[[I]]]
// CHECK: gpu.return

// Scalar (vector width 1): one element per thread, no vector path.
// SCALAR-LABEL: gpu.func @scaled_exp(
// SCALAR-NOT: vector.load
// SCALAR: %[[CTA:.*]] = arith.muli %block_id_x, %c128 : index
// SCALAR: %[[FIRST:.*]] = arith.addi %[[CTA]], %thread_id_x : index
// SCALAR: arith.addi %[[FIRST]], %c1 : index
// SCALAR: scf.for %{{.*}} = %[[FIRST]] to
// SCALAR-NOT: vector.load
// SCALAR: gpu.return

// A scalar argument is uniform; the kernel still takes the element grid.
// TWOWIDTHS-LABEL: func.func @scaled_exp
// TWOWIDTHS-SAME: grid = "elements"
// Two outputs from inputs of independent widths have no common flat index:
// one CTA per row.
// TWOWIDTHS-LABEL: func.func @independent
// TWOWIDTHS-SAME: grid = "rows"
// A broadcast weight is not elementwise over [rows, W]: one CTA per row.
// TWOWIDTHS-LABEL: func.func @weighted
// TWOWIDTHS-SAME: grid = "rows"
func.func @scaled_exp(%x: tensor<?x?xf32>, %s: f32) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %e = math.exp %x : tensor<?x?xf32>
  %k = tile.splat %s like %e : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %e, %k : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
func.func @independent(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {tile.kernel} {
  %0 = math.exp %x : tensor<?x?xf32>
  %1 = math.exp %y : tensor<?x?xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<?x?xf32>
}
func.func @weighted(%x: tensor<?x?xf32>, %w: tensor<?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %wb = tile.broadcast %w [0] like %x : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %wb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
