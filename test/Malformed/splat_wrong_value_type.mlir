// RUN: %expect-error tile-opt %s
func.func @f(%s: f16, %t: tensor<?xf32>) -> tensor<?xf32> {
  %0 = tile.splat %s like %t : f16, tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
