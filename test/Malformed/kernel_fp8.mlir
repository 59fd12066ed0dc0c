// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<?xf8E4M3FN>) -> tensor<?xf32> attributes {tile.kernel} {
  %0 = tile.cast %x : tensor<?xf8E4M3FN> to tensor<?xf32>
  return %0 : tensor<?xf32>
}
