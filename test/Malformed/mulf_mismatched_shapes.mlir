// RUN: %expect-error tile-opt %s
func.func @f(%a: tensor<4xf32>, %b: tensor<5xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %a, %b : tensor<4xf32>, tensor<5xf32>
  return %0 : tensor<4xf32>
}
