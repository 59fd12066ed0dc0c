// Integer data (labels) that the derived backward does not read: the
// backward keeps every primal argument, and the GPU lowering takes an
// unread integer argument as per-row data (it once refused it as
// "integer data per column").
// RUN: tile-opt %s -tile-differentiate -o %t.mlir
// RUN: tile-translate --tile-to-ptx %t.mlir -o /dev/null
// RUN: tile-run %s --gradient-check --args=MxN,M --rows=1,7 --widths=1,13 | FileCheck %s
// CHECK: 4 gradients checked, 0 failed

func.func @shifted(%x: tensor<?x?xf32>, %labels: tensor<?xi64>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %l = tile.cast %labels : tensor<?xi64> to tensor<?xf32>
  %lb = tile.broadcast %l [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %y = arith.addf %sq, %lb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
