// Soft-capping of logits (Gemma 2): y = cap * tanh(x / cap), elementwise,
// its backward derived. tile.ops.cross_entropy(..., softcap=cap) runs it
// before examples/cross_entropy.mlir.
func.func @softcap(%x: tensor<?x?xbf16>, %cap: f32 {tile.nograd})
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %capv = tile.splat %cap like %xf : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %scaled = arith.divf %xf, %capv : tensor<?x?xf32>
  %squashed = math.tanh %scaled : tensor<?x?xf32>
  %y = arith.mulf %squashed, %capv : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
