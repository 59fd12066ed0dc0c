// RUN: %expect-error tile-opt %s
func.func @f(%r: tensor<?xf32>) -> tensor<?x?xf32> {
  %0 = tile.broadcast %r [1] : tensor<?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
