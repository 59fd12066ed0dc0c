// GEGLU in f16: out = gelu(a) * b with the tanh approximation
//   gelu(x) = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).

func.func @geglu(%a: tensor<?x?xf16>, %b: tensor<?x?xf16>) -> tensor<?x?xf16>
    attributes {tile.kernel} {
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %k = arith.constant 0.7978845608028654 : f32
  %c = arith.constant 0.044715 : f32
  %af = tile.cast %a : tensor<?x?xf16> to tensor<?x?xf32>
  %bf = tile.cast %b : tensor<?x?xf16> to tensor<?x?xf32>
  %halfv = tile.splat %half like %af : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %onev = tile.splat %one like %af : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %kv = tile.splat %k like %af : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %cv = tile.splat %c like %af : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %x2 = arith.mulf %af, %af : tensor<?x?xf32>
  %x3 = arith.mulf %x2, %af : tensor<?x?xf32>
  %cx3 = arith.mulf %cv, %x3 : tensor<?x?xf32>
  %inner = arith.addf %af, %cx3 : tensor<?x?xf32>
  %scaled = arith.mulf %kv, %inner : tensor<?x?xf32>
  %t = math.tanh %scaled : tensor<?x?xf32>
  %onept = arith.addf %onev, %t : tensor<?x?xf32>
  %hx = arith.mulf %halfv, %af : tensor<?x?xf32>
  %gelu = arith.mulf %hx, %onept : tensor<?x?xf32>
  %out = arith.mulf %gelu, %bf : tensor<?x?xf32>
  %outh = tile.cast %out : tensor<?x?xf32> to tensor<?x?xf16>
  return %outh : tensor<?x?xf16>
}
