// RUN: %expect-error tile-opt -tile-differentiate %s
// RUN: %expect-error tile-run --gradient-check --args=3x5,2 %s
// A differentiable scalar argument is refused with a message naming it.
func.func @f(%x: tensor<?x?xf32>, %s: f32) -> tensor<?x?xf32> attributes {tile.kernel} {
  %sv = tile.splat %s like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %0 = arith.mulf %x, %sv : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
