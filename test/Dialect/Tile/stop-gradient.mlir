// tile.stop_gradient: the identity in the forward, no cotangent through it.
// y = x * stop_gradient(x) has the derived gradient g * x (not 2 g x), and
// evaluates as x * x.
// RUN: tile-opt %s -tile-differentiate -canonicalize -cse | FileCheck %s
// RUN: tile-run %s --args=2x3 | FileCheck %s --check-prefix=EVAL
// RUN: tile-translate --tile-to-ptx %s -o /dev/null

// CHECK-LABEL: func.func @square_bwd
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>, %[[G:.*]]: tensor<?x?xf32> {tile.cotangent = 0 : i64})
// CHECK-NEXT: %[[S:.*]] = tile.stop_gradient %[[X]] : tensor<?x?xf32>
// CHECK-NEXT: %[[D:.*]] = arith.mulf %[[G]], %[[S]] : tensor<?x?xf32>
// CHECK-NEXT: return %[[D]]
// EVAL: min: 0.075014648434867048  max: 3.5882396494531008

func.func @square(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %s = tile.stop_gradient %x : tensor<?x?xf32>
  %y = arith.mulf %x, %s : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
