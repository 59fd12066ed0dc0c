// The compiler never rejects a kernel it derived: a weight nothing reads
// has a zero gradient, `tile.splat 0 like %w`, that nothing ties to rows
// or columns. It is taken per column, like the weight, and lowers.
// RUN: tile-opt %s -tile-differentiate -canonicalize -cse | tile-translate --tile-manifest | FileCheck %s
// CHECK: "name": "f_bwd"
// CHECK: "name": "f_bwd_finalize"

func.func @f(%x: tensor<?x?xf32>, %w: tensor<?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = arith.mulf %x, %x : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
