// A non-splat constant once lowered as if every element were the first
// (a silent miscompile): now it is a table in the GPU module, read at the
// element's row and column, and the manifest pins the row count.
// RUN: tile-opt %s -tile-schedule="vector-width=1" -convert-tile-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: tile-translate --tile-manifest %s | FileCheck %s --check-prefix=MANIFEST
// RUN: tile-run %s --function=f --args=2x3 --print-values | FileCheck %s --check-prefix=EVAL

// GPU: memref.global "private" constant @f_constant_{{[0-9]+}} : memref<6xf32, #gpu.address_space<global>> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00]> {alignment = 16 : i64}
// GPU: memref.get_global @f_constant_
// MANIFEST: "rows == 2"
// MANIFEST: "w0 == 3"

func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tile.kernel} {
  %c = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %z = arith.subf %x, %x : tensor<2x3xf32>
  %y = arith.addf %z, %c : tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
// EVAL: values: 1 2 3 4 5 6

// A bf16 kernel whose table multiplies a varying input: the GPU suite runs
// both functions on the GPU against the evaluator (tile-run --device).
// RUN: tile-run %s --function=g --args=3x5 --print-values --exact | FileCheck %s --check-prefix=EVAL-G
func.func @g(%x: tensor<3x5xbf16>) -> tensor<3x5xbf16> attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<3x5xbf16> to tensor<3x5xf32>
  %c = arith.constant dense<[[1.0, -2.0, 0.5, 4.0, 8.0],
                             [0.25, 3.0, -1.0, 6.0, 0.0],
                             [7.0, -0.5, 2.0, 1.5, -4.0]]> : tensor<3x5xf32>
  %y = arith.mulf %xf, %c : tensor<3x5xf32>
  %yb = tile.cast %y : tensor<3x5xf32> to tensor<3x5xbf16>
  return %yb : tensor<3x5xbf16>
}
// EVAL-G: count: 15
