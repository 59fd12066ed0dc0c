// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<99999999999999999999999xf32>) -> tensor<99999999999999999999999xf32> {
  return %x : tensor<99999999999999999999999xf32>
}
