// RUN: tile-opt %s -tile-schedule=vector-width=4 -convert-tile-to-gpu | FileCheck %s
// RUN: tile-opt %s -tile-schedule=vector-width=8 -convert-tile-to-gpu | FileCheck %s --check-prefix=EIGHT

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

// Blocks of 4 in groups of 8 bf16 lanes: lanes 0-1 trade with 2-3, 4-5
// with 6-7, from the one load.
// EIGHT-LABEL: gpu.func @quads(
// EIGHT-NOT: arith.shrui
// EIGHT: scf.if
// EIGHT: vector.load %arg0{{.*}} vector<8xbf16>
// EIGHT-NOT: vector.load
// EIGHT: arith.subf %[[L0:[0-9]+]], %[[L2:[0-9]+]]
// EIGHT-NEXT: arith.subf %[[L1:[0-9]+]], %[[L3:[0-9]+]]
// EIGHT-NEXT: arith.subf %[[L2]], %[[L0]]
// EIGHT-NEXT: arith.subf %[[L3]], %[[L1]]
// EIGHT-NEXT: arith.subf %[[L4:[0-9]+]], %[[L6:[0-9]+]]
// EIGHT-NEXT: arith.subf %[[L5:[0-9]+]], %[[L7:[0-9]+]]
// EIGHT-NEXT: arith.subf %[[L6]], %[[L4]]
// EIGHT-NEXT: arith.subf %[[L7]], %[[L5]]
// EIGHT: vector.store
func.func @quads(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16> attributes {tile.kernel} {
  %c4 = arith.constant 4 : index
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %s = tile.swap_halves %xf [%c4] : tensor<?x?xf32>
  %y = arith.subf %xf, %s : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
