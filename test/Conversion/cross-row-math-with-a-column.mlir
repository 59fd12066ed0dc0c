// Math on a cross-row sum with a per-column argument runs in the finalize.
// The kinds are found in program order: seeding the main_grad argument
// queued its addition ahead of the sum it adds, which then made the sum's
// negation per column and refused the kernel as needing a value both per
// column and across rows.
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu | FileCheck %s
// CHECK: gpu.func @k(
// CHECK: gpu.func @k_finalize(
// CHECK: arith.negf
// CHECK: arith.addf
func.func @k(%x: tensor<?x?xf32>, %mg: tensor<?xf32> {tile.main_grad = 0 : i64})
    -> tensor<?xf32> attributes {tile.kernel} {
  %s = tile.reduce sum %x [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  %a = arith.negf %s : tensor<?xf32>
  %b = arith.addf %a, %mg : tensor<?xf32>
  return %b : tensor<?xf32>
}
