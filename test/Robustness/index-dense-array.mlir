// A dense array of index: MLIR 22's parser asks index for a bit width and
// crashes (found by the differentiate harness with the structural
// mutator). The gate before the parser (findUnparsableInput) refuses it
// with a located error in every tool and the JIT.
// RUN: %expect-error tile-opt %s
// RUN: not tile-opt %s 2>&1 | FileCheck %s
// RUN: %expect-error tile-translate --tile-kernel-signature %s
// RUN: %expect-error tile-run --args=2x2 %s
// (These comments say array<index too: the scan skips comments and strings,
// so the error is at the attribute.)

// CHECK: index-dense-array.mlir:[[# @LINE + 2]]:44: error: a dense array of index (array<index: ...>) is not supported: MLIR 22's parser crashes on it; use i64
func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = tile.reduce sum %x [1] {tile.note = array< index: 1>} : tensor<?x?xf32> -> tensor<?xf32>
  return %x : tensor<?x?xf32>
}
