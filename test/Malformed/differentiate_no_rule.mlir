// RUN: %expect-error tile-opt -tile-differentiate %s
// RUN: %expect-error tile-run --gradient-check --args=3x5 %s
// An op without a derivative rule on the gradient path: a located error
// naming the op, exit 1, from the pass and from the gradient check alike.
func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %0 = math.atan %x : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
