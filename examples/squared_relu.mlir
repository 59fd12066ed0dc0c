// Squared ReLU in bf16: y = max(x, 0)^2 (Primer's activation, Nemotron's
// MLP: down(relu2(up(x))), not gated). The tile.nn.SquaredReLUMLP's kernel;
// its lit checks are test/Examples/squared_relu.test.

func.func @squared_relu(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel} {
  %zero = arith.constant 0.0 : f32
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %zv = tile.splat %zero like %xf : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %r = arith.maximumf %xf, %zv : tensor<?x?xf32>
  %y = arith.mulf %r, %r : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
