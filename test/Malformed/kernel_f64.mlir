// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<?xf64>) -> tensor<?xf64> attributes {tile.kernel} {
  return %x : tensor<?xf64>
}
