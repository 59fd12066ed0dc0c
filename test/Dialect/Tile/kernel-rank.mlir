// A kernel's tensors are [rows, width] or rank 1: the verifier says so for
// rank 3 and more (arguments, results, values inside), where the evaluator
// would accept it and only the GPU lowering would fail. Leading dimensions
// are the caller's to flatten into rows (tile.Kernel does).
// RUN: tile-opt %s -split-input-file -verify-diagnostics

// expected-error@+1 {{kernel argument #0 has rank 3 ('tensor<?x?x?xf32>'); kernels work on [rows, width] tensors and rank-1 vectors: flatten the leading dimensions into rows before the call (tile.Kernel in Python does so for [..., N] tensors)}}
func.func @argument(%x: tensor<?x?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %s = tile.reduce sum %x [0] : tensor<?x?x?xf32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// expected-error@+1 {{kernel result #0 has rank 4}}
func.func @result(%x: tensor<?x?xf32>) -> tensor<1x2x3x4xf32>
    attributes {tile.kernel} {
  %c = arith.constant dense<0.0> : tensor<1x2x3x4xf32>
  return %c : tensor<1x2x3x4xf32>
}

// -----

func.func @inside(%x: tensor<3x4xf32>) -> tensor<3x4xf32>
    attributes {tile.kernel} {
  // expected-error@+1 {{'arith.constant' result has rank 3}}
  %c = arith.constant dense<1.0> : tensor<2x3x4xf32>
  %s = tile.reduce sum %c [0] : tensor<2x3x4xf32> -> tensor<3x4xf32>
  %y = arith.addf %x, %s : tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
