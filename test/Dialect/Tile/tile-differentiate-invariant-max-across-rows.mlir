// A row maximum reduced again over the rows (the largest row maximum,
// subtracted from each) is no longer a per-row change: a rank-1 tensor's
// last dimension is the rows', so the reduction moves one row's change to
// every row and the rules call it unknown. The maximum keeps its cotangent,
// and the gradient checks (it held the maximum constant once, and gave 0).
// Its own file: the GPU lowering refuses the rank-0 result, and the other
// file runs on the device.
// RUN: tile-opt %s -tile-differentiate -canonicalize -cse | FileCheck %s
// RUN: tile-run %s --gradient-check --args=MxN --rows=1,7 --widths=1,13,1000 | FileCheck %s --check-prefix=GRAD
// GRAD: 6 gradients checked, 0 failed

// CHECK-LABEL: func.func @across_row_maxima_bwd
// CHECK: arith.cmpf oeq
// CHECK: return
func.func @across_row_maxima(%x: tensor<?x?xf32>) -> tensor<?xf32>
    attributes {tile.kernel} {
  %m = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %g = tile.reduce max %m [0] : tensor<?xf32> -> tensor<f32>
  %gb = tile.broadcast %g [0] like %m : tensor<f32>, tensor<?xf32> -> tensor<?xf32>
  %d = arith.subf %m, %gb : tensor<?xf32>
  return %d : tensor<?xf32>
}

