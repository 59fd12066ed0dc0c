// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<?xi32>) -> tensor<?xf32> {
  %0 = tile.cast %x : tensor<?xi32> to tensor<?xf32>
  return %0 : tensor<?xf32>
}
