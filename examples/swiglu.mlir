// SwiGLU with two inputs: c = silu(a) * b, where silu(a) = a * sigmoid(a).
// a and b are [rows, H] in bf16; the math runs in f32.
func.func @swiglu(%a: tensor<?x?xbf16>, %b: tensor<?x?xbf16>)
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %af = tile.cast %a : tensor<?x?xbf16> to tensor<?x?xf32>
  %bf = tile.cast %b : tensor<?x?xbf16> to tensor<?x?xf32>
  %sig = tile.sigmoid %af : tensor<?x?xf32>
  %silu = arith.mulf %af, %sig : tensor<?x?xf32>
  %c = arith.mulf %silu, %bf : tensor<?x?xf32>
  %cb = tile.cast %c : tensor<?x?xf32> to tensor<?x?xbf16>
  return %cb : tensor<?x?xbf16>
}
