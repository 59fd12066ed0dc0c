// RUN: tile-opt %s -tile-schedule=vector-width=1 -convert-tile-to-gpu | FileCheck %s

// Every input a chunk reads at its own columns is loaded before any of the
// chunk's math, so the loads are in flight together (Emitter::prefetch).
// CHECK-LABEL: gpu.func @gate(
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.load
// CHECK-NOT: {{math\.|arith\.mulf|arith\.addf|arith\.divf}}
// CHECK: memref.load
// CHECK-NOT: {{math\.|arith\.mulf|arith\.addf|arith\.divf}}
// CHECK: memref.load
// CHECK: math.exp
// CHECK: memref.store
func.func @gate(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %w: tensor<?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %s = tile.sigmoid %a : tensor<?x?xf32>
  %g = arith.mulf %s, %b : tensor<?x?xf32>
  %wb = tile.broadcast %w [0] like %a
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %g, %wb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
