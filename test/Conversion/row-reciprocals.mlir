// An f32 division by a row value or a scalar multiplies by its reciprocal,
// taken once per row (the row value's) or once at kernel entry (the
// scalar's) and shared by every division by the same value; a division by
// a per-column weight stays a division (multiplyByRowReciprocals). The
// broadcast and splat it divided by are gone. The rewrite is the pass
// tile-row-reciprocals (tile-lower-to-ptx runs it right before the
// conversion); the conversion alone divides as written.
// RUN: tile-opt %s -tile-schedule -tile-row-reciprocals -convert-tile-to-gpu | FileCheck %s
// RUN: tile-opt %s -tile-row-reciprocals | FileCheck %s --check-prefix=KERNEL
// RUN: tile-opt %s -tile-row-reciprocals=max-ops=12 | FileCheck %s --check-prefix=TOO-BIG
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu | FileCheck %s --check-prefix=AS-WRITTEN
//
// The tile function, as the pass rewrote it: one reciprocal each, shaped
// like its divisor where the divisor was.
// KERNEL-LABEL: func.func @scale(
// KERNEL-SAME: %[[X:[^:]*]]: tensor<?x?xf32>, %[[W:[^:]*]]: tensor<?xf32>, %[[C:[^:]*]]: f32
// KERNEL: %[[RC:.*]] = arith.divf %{{.*}}, %[[C]] : f32
// KERNEL: %[[S:.*]] = tile.reduce sum
// KERNEL: %[[RS:.*]] = arith.divf %{{.*}}, %[[S]] : tensor<?xf32>
// KERNEL-NOT: tile.broadcast %[[S]] [1]
// KERNEL: tile.broadcast %[[RS]] [1]
// KERNEL: tile.splat %[[RC]]
// KERNEL: arith.mulf %[[X]], %{{.*}} : tensor<?x?xf32>
// KERNEL: arith.mulf
// KERNEL: arith.divf %{{.*}}, %{{.*}} : tensor<?x?xf32>
// The multiply keeps the division's flags but nnan and ninf (1 / r may be
// infinite).
// KERNEL: arith.mulf %[[X]], %{{.*}} fastmath<afn> : tensor<?x?xf32>
// KERNEL-NOT: arith.divf
// KERNEL: return
//
// Past max-ops (its 10 ops and up to 4 more a division), nothing changes.
// TOO-BIG-LABEL: func.func @scale(
// TOO-BIG-COUNT-4: arith.divf %{{.*}} : tensor<?x?xf32>
// TOO-BIG-NOT: arith.mulf
//
// Without the pass, every division is the GPU kernel's, per element: no
// reciprocal (a constant one divided by the divisor) anywhere.
// AS-WRITTEN-LABEL: gpu.func @scale(
// AS-WRITTEN-NOT: arith.divf %cst
// AS-WRITTEN: gpu.return
//
// The GPU kernel: the scalar's reciprocal at entry, the row's once per
// row, then multiplies; only the weight's division is per element.
// CHECK-LABEL: gpu.func @scale(
// CHECK: arith.divf %{{.*}}, %arg2 : f32
// CHECK: scf.for
// CHECK: %[[R:.*]] = arith.divf %cst{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[R]]
// CHECK-COUNT-3: arith.mulf %{{.*}}, %[[R]]
// CHECK-COUNT-4: arith.mulf
// CHECK-COUNT-4: arith.divf
// CHECK-NEXT: arith.mulf %{{.*}}, %[[R]]
func.func @scale(%x: tensor<?x?xf32>, %w: tensor<?xf32>, %c: f32) -> tensor<?x?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 256 : i64}} {
  %s = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %x : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %cb = tile.splat %c like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %wb = tile.broadcast %w [0] like %x : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %a = arith.divf %x, %sb : tensor<?x?xf32>
  %b = arith.divf %a, %cb : tensor<?x?xf32>
  %d = arith.divf %b, %wb : tensor<?x?xf32>
  %e = arith.divf %x, %sb fastmath<nnan,ninf,afn> : tensor<?x?xf32>
  %y = arith.addf %d, %e : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
