// silu_and_mul: one [rows, 2H] input whose first half is the gate a and
// second half the up projection b; out = silu(a) * b, shape [rows, H].
func.func @silu_and_mul(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel} {
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
  %out = arith.mulf %silu, %bf : tensor<?x?xf32>
  %outb = tile.cast %out : tensor<?x?xf32> to tensor<?x?xbf16>
  return %outb : tensor<?x?xbf16>
}
