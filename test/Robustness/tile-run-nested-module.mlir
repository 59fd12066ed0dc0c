// tile-run finds kernels in nested modules (as the tools print them).
// RUN: tile-run %s --args=2x3 | FileCheck %s
// CHECK: function @square
module {
  module {
    func.func @square(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
      %y = arith.mulf %x, %x : tensor<?x?xf32>
      return %y : tensor<?x?xf32>
    }
  }
}
