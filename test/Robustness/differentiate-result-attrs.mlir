// A result attribute plus a saved value once aborted tile-differentiate
// (the forward variant's result attributes kept the old arity).
// RUN: tile-opt %s -tile-differentiate | FileCheck %s

// CHECK-LABEL: func.func @f_fwd
// CHECK-SAME: -> (tensor<?x?xf32> {test.kept}, tensor<?xf32> {tile.saved = 0 : i64})
func.func @f(%x: tensor<?x?xf32>) -> (tensor<?x?xf32> {test.kept}) attributes {tile.kernel} {
  %r = tile.reduce sum %x [1] {tile.save} : tensor<?x?xf32> -> tensor<?xf32>
  %b = tile.broadcast %r [1] like %x : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %b : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
