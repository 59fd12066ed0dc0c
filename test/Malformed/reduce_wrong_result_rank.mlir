// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
