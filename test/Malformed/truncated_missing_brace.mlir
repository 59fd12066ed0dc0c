// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = tile.sigmoid %x : tensor<?xf32>
  return %0 : tensor<?xf32>
