// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  %0 = tile.reduce sum %x [2] : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
