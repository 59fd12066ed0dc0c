// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %0 = tile.slice %x [%c5, %c4] : tensor<2x8xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
