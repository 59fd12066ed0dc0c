// Squared ReLU in bf16: y = max(x, 0)^2 (Primer's activation).
//
// RUN: tile-run %s --gradient-check --args=MxN --rows=1,7,13 --widths=1,13,1000,3000 | FileCheck %s
// RUN: tile-opt %s -tile-differentiate -canonicalize -cse | FileCheck %s --check-prefix=BWD
// CHECK: 12 gradients checked, 0 failed
// The gradient reaches x only where x won the maximum.
// BWD-LABEL: func.func @squared_relu_bwd
// BWD: arith.cmpf oge
// BWD: arith.select
// BWD: return {{.*}} : tensor<?x?xbf16>

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
