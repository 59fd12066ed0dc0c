// A dense array of index through a type alias (and an alias of an alias):
// MLIR 22's parser crashes on it as on array<index: ...> itself. Found by
// the evaluate harness (a NUL byte after the `<`, which MLIR's lexer skips
// as white space; that spelling is in unittests/Tools/ToolSupportTest.cpp).
// RUN: %expect-error tile-opt %s
// RUN: not tile-opt %s 2>&1 | FileCheck %s
// RUN: %expect-error tile-translate --tile-kernel-signature %s
// RUN: %expect-error tile-run --args=2x2 %s

!t = index
!u = !t

// CHECK: index-dense-array-alias.mlir:[[# @LINE + 2]]:44: error: a dense array of index (array<index: ...>) is not supported: MLIR 22's parser crashes on it; use i64
func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = tile.reduce sum %x [1] {tile.note = array<!u: 1>} : tensor<?x?xf32> -> tensor<?xf32>
  return %x : tensor<?x?xf32>
}
