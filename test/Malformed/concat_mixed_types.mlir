// RUN: %expect-error tile-opt %s
func.func @f(%a: tensor<?x?xf32>, %b: tensor<?x?xbf16>) -> tensor<?x?xf32> {
  %0 = tile.concat %a, %b : tensor<?x?xf32>, tensor<?x?xbf16> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
