// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<?xbf16>) -> tensor<?xbf16> attributes {tile.kernel} {
  %0 = arith.addf %x, %x : tensor<?xbf16>
  return %0 : tensor<?xbf16>
}
