// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<?xi8>) -> tensor<?xf32> attributes {tile.kernel} {
  %0 = arith.constant dense<0.0> : tensor<4xf32>
  %1 = tensor.cast %0 : tensor<4xf32> to tensor<?xf32>
  return %1 : tensor<?xf32>
}
