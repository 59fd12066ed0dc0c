// A dense array of index with white space and a comment around the `<`, as
// MLIR's lexer allows: its parser crashes on it as on array<index: ...>.
// RUN: %expect-error tile-opt %s
// RUN: not tile-opt %s 2>&1 | FileCheck %s

// CHECK: index-dense-array-spaced.mlir:[[# @LINE + 2]]:44: error: a dense array of index
func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = tile.reduce sum %x [1] {tile.note = array < // the element type
      index: 1>} : tensor<?x?xf32> -> tensor<?xf32>
  return %x : tensor<?x?xf32>
}
