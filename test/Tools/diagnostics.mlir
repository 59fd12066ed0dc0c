// Diagnostics read `file:line:col: error: ...`, without the op dumped in
// generic form after them unless --mlir-print-op-on-diagnostic asks for it
// (in every tool).
//
// RUN: not tile-opt %s 2>&1 | FileCheck %s --check-prefix=PLAIN
// RUN: not tile-translate --tile-manifest %s 2>&1 | FileCheck %s --check-prefix=PLAIN
// RUN: not tile-run %s --args=3x4 2>&1 | FileCheck %s --check-prefix=PLAIN
// PLAIN: diagnostics.mlir:[[@LINE+8]]:8: error: 'math.atan' op is not supported in a tile kernel
// PLAIN-NOT: see current operation
//
// RUN: not tile-opt %s --mlir-print-op-on-diagnostic 2>&1 | FileCheck %s --check-prefix=DUMP
// RUN: not tile-translate --tile-manifest %s --mlir-print-op-on-diagnostic 2>&1 | FileCheck %s --check-prefix=DUMP
// RUN: not tile-run %s --args=3x4 --mlir-print-op-on-diagnostic 2>&1 | FileCheck %s --check-prefix=DUMP
// DUMP: note: see current operation: %0 = "math.atan"
func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = math.atan %x : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
