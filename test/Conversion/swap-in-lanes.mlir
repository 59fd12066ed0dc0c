// RUN: tile-opt %s -tile-schedule=vector-width=4 -convert-tile-to-gpu | FileCheck %s

// A swap_halves whose block (2: interleaved pairs) divides the vector width
// trades the lanes of the one load in registers (PointEmitter::
// blockWithinGroup); the alignment test asks nothing of its half block, so
// the vector path runs. The scalar tail still reads the partner a half
// block away.
// CHECK-LABEL: gpu.func @pairs(
// CHECK-NOT: arith.shrui
// CHECK: scf.if
// CHECK: %[[V:.*]] = vector.load %arg0
// CHECK-NOT: vector.load
// CHECK: %[[L0:.*]] = vector.extract %[[V]][0]
// CHECK: %[[L1:.*]] = vector.extract %[[V]][1]
// CHECK: %[[L2:.*]] = vector.extract %[[V]][2]
// CHECK: %[[L3:.*]] = vector.extract %[[V]][3]
// CHECK: arith.subf %[[L0]], %[[L1]]
// CHECK: arith.subf %[[L1]], %[[L0]]
// CHECK: arith.subf %[[L2]], %[[L3]]
// CHECK: arith.subf %[[L3]], %[[L2]]
// CHECK: vector.store
// CHECK: memref.load %arg0
// CHECK: arith.shrui %c2
// CHECK: arith.remui %{{.*}}, %c2
// CHECK: memref.load %arg0
func.func @pairs(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %c2 = arith.constant 2 : index
  %s = tile.swap_halves %x [%c2] : tensor<?x?xf32>
  %y = arith.subf %x, %s : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// A block wider than the vector (rotate_half's head size) keeps the half
// block in the alignment test and reads the partner group as a load of its
// own.
// CHECK-LABEL: gpu.func @halves(
// CHECK: %[[HALF:.*]] = arith.shrui %c16
// CHECK: arith.remui %[[HALF]], %c4
// CHECK: scf.if
// CHECK: vector.load %arg0
// CHECK: vector.load %arg0
func.func @halves(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %c16 = arith.constant 16 : index
  %s = tile.swap_halves %x [%c16] : tensor<?x?xf32>
  %y = arith.subf %x, %s : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
