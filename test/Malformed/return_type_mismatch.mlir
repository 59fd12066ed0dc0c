// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<?xf32>) -> tensor<?xbf16> {
  return %x : tensor<?xf32>
}
