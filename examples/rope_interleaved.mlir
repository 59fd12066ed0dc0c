// RoPE in the interleaved layout (GLM-4's, GPT-J's): a head's columns
// 2i and 2i+1 are one pair, rotated by angle i:
//   out[2i]   = x[2i] * cos_i - x[2i+1] * sin_i
//   out[2i+1] = x[2i+1] * cos_i + x[2i] * sin_i
// = x * cos + swap_halves(x, block 2) * sin * sign, sign = -1 on even
// columns and +1 on odd ones. Where rope.mlir swaps a head's halves
// (block = head size), this kernel swaps each pair (block 2): the same
// ops, one block size apart. x is [tokens, heads * D]; cos and sin are
// [tokens, D], each angle's value twice in a row (cos_0, cos_0, cos_1,
// ...); sign is [D]. The backward (derived) is
// dy * cos + swap_halves(dy * sin * sign, block 2), nothing saved.

func.func @rope_interleaved(%x: tensor<?x?xbf16>,
                            %cos: tensor<?x?xbf16> {tile.nograd},
                            %sin: tensor<?x?xbf16> {tile.nograd},
                            %sign: tensor<?xf32> {tile.nograd})
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %c2 = arith.constant 2 : index
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
  %xs = tile.swap_halves %xf [%c2] : tensor<?x?xf32>
  %a = arith.mulf %xf, %cr : tensor<?x?xf32>
  %b = arith.mulf %xs, %sr : tensor<?x?xf32>
  %y = arith.addf %a, %b : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
