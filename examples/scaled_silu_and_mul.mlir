// scaled_silu_and_mul: silu_and_mul with a weight per row. x [rows, 2H] is
// the gate a and the up projection b side by side, s [rows] one weight a
// row (f32); out = silu(a) * b * s, shape [rows, H].
//
// A mixture of experts' routing weights applied before the down projection
// (down is linear: w · down(h) = down(w · h)). Their gradient is then the
// row sum ds = Σ dout · silu(a) · b that the derived backward makes from
// what the step keeps anyway, [rows, 2H], rather than from the experts'
// [rows, hidden] outputs a weighted sum after the projection would need.
func.func @scaled_silu_and_mul(%x: tensor<?x?xbf16>, %s: tensor<?xf32>)
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %width = tensor.dim %x, %c1 : tensor<?x?xbf16>
  %h = arith.divui %width, %c2 : index
  %a = tile.slice %x [%c0, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
  %b = tile.slice %x [%h, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
  %af = tile.cast %a : tensor<?x?xbf16> to tensor<?x?xf32>
  %bf = tile.cast %b : tensor<?x?xbf16> to tensor<?x?xf32>
  %sig = tile.sigmoid %af : tensor<?x?xf32>
  %silu = arith.mulf %af, %sig : tensor<?x?xf32>
  %prod = arith.mulf %silu, %bf : tensor<?x?xf32>
  %sb = tile.broadcast %s [1] like %prod
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %out = arith.mulf %prod, %sb : tensor<?x?xf32>
  %outb = tile.cast %out : tensor<?x?xf32> to tensor<?x?xbf16>
  return %outb : tensor<?x?xbf16>
}
