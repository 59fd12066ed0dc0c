// RUN: tile-opt %s -tile-schedule="vector-width=1 row-grid=true" -convert-tile-to-gpu | FileCheck %s

// Results whose widths the launcher checks to be equal (they meet in an
// elementwise op: a * b) share one column loop, even though %a and %b have
// width parameters of their own: each chunk of a and b is loaded once and
// both results are stored from it.
// CHECK-LABEL: gpu.func @joined(
// CHECK: scf.for
// CHECK: scf.for
// CHECK-COUNT-2: memref.load
// CHECK-NOT: {{scf.for|memref.load}}
// CHECK: memref.store
// CHECK-NOT: {{scf.for|memref.load}}
// CHECK: memref.store
// CHECK-NOT: scf.for
// CHECK: gpu.return
func.func @joined(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {tile.kernel} {
  %p = arith.mulf %a, %b : tensor<?x?xf32>
  %q = arith.addf %b, %b : tensor<?x?xf32>
  return %p, %q : tensor<?x?xf32>, tensor<?x?xf32>
}

// Nothing ties the widths of %a and %b: one loop each.
// CHECK-LABEL: gpu.func @apart(
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.store
// CHECK: scf.for
// CHECK: memref.store
// CHECK: gpu.return
func.func @apart(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {tile.kernel} {
  %p = arith.mulf %a, %a : tensor<?x?xf32>
  %q = arith.addf %b, %b : tensor<?x?xf32>
  return %p, %q : tensor<?x?xf32>, tensor<?x?xf32>
}
