// A kernel that returns its arguments as they are once took the vector
// path at any width: with no op reading them, the arguments' widths never
// reached the alignment test, and at width 13 a row's 16-byte loads were
// misaligned (CUDA_ERROR_MISALIGNED_ADDRESS). Found by the GPU differential
// check (fuzz/differential.py --device) on a generated kernel whose casts
// canonicalized away. Both widths are now tested, as every buffer's
// address is.
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu | FileCheck %s

func.func @copy(%x: tensor<?x?xf16>, %y: tensor<?x?xf16>)
    -> (tensor<?x?xf16>, tensor<?x?xf16>) attributes {tile.kernel} {
  return %y, %x : tensor<?x?xf16>, tensor<?x?xf16>
}
// CHECK-LABEL: gpu.func @copy(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<{{[0-9]+}}xf16>, %[[Y:[a-z0-9]+]]: memref<{{[0-9]+}}xf16>
// CHECK-SAME: %[[ROWS:[a-z0-9]+]]: index, %[[W0:[a-z0-9]+]]: index, %[[W1:[a-z0-9]+]]: index
// CHECK-DAG: arith.remui %[[W0]], %c8
// CHECK-DAG: arith.remui %[[W1]], %c8
// CHECK: scf.if
