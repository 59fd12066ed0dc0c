// RoPE, the rotary position embedding in the layout Hugging Face's Llama,
// Qwen, Mistral and Gemma use (GPT-NeoX's rotate_half), for every head of a
// token at once:
//   out = x * cos + rotate_half(x) * sin   per head of D columns,
//   rotate_half(h) = concat(-h[D/2:], h[:D/2]) = swap_halves(h) * sign,
// with sign = -1 on a head's first half and +1 on its second. x is
// [tokens, heads * D] (the heads of a token side by side, as the projection
// writes them); cos and sin are [tokens, D]; sign is [D]. The backward
// (derived) is dy * cos + swap_halves(dy * sin * sign): a rotation's
// transpose, with nothing saved.

func.func @rope(%x: tensor<?x?xbf16>, %cos: tensor<?x?xbf16> {tile.nograd},
                %sin: tensor<?x?xbf16> {tile.nograd},
                %sign: tensor<?xf32> {tile.nograd})
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %c1 = arith.constant 1 : index
  %d = tensor.dim %cos, %c1 : tensor<?x?xbf16>
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %cf = tile.cast %cos : tensor<?x?xbf16> to tensor<?x?xf32>
  %sf = tile.cast %sin : tensor<?x?xbf16> to tensor<?x?xf32>
  %sb = tile.broadcast %sign [0] like %sf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %ss = arith.mulf %sf, %sb : tensor<?x?xf32>
  %cr = tile.repeat %cf like %xf
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %sr = tile.repeat %ss like %xf
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %xs = tile.swap_halves %xf [%d] : tensor<?x?xf32>
  %a = arith.mulf %xf, %cr : tensor<?x?xf32>
  %b = arith.mulf %xs, %sr : tensor<?x?xf32>
  %y = arith.addf %a, %b : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
