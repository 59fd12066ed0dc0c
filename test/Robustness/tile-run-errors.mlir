// Evaluator failures that once killed tile-run (SIGFPE, std::length_error,
// a 2^62-element allocation) give `file:line:col: error:` and exit 1.
// RUN: %expect-error tile-run --function=divide --args=2x2 %s
// RUN: not tile-run --function=divide --args=2x2 %s 2>&1 | FileCheck %s --check-prefix=DIVIDE
// RUN: %expect-error tile-run --function=huge --args=2x2 %s
// RUN: not tile-run --function=huge --args=2x2 %s 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: %expect-error tile-run --function=wrap --args=2x2 %s
// RUN: not tile-run --function=wrap --args=2x2 %s 2>&1 | FileCheck %s --check-prefix=WRAP

// DIVIDE: tile-run-errors.mlir:[[# @LINE + 6]]:8: error: 'arith.divsi': signed integer division overflows (the minimum value by -1)
// HUGE: error: 'arith.constant': its result type tensor<100000x100000xf32> exceeds the evaluator's limit of 67108864 elements
// WRAP: error: 'tile.slice': offset 4611686018427387904 and size 4611686018427387904 are out of bounds for a last dimension of size 2
func.func @divide(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %a = arith.constant -9223372036854775808 : index
  %b = arith.constant -1 : index
  %c = arith.divsi %a, %b : index
  %d = tile.slice %x [%c, %c] : tensor<?x?xf32> -> tensor<?x?xf32>
  return %d : tensor<?x?xf32>
}

func.func @huge(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %c = arith.constant dense<1.0> : tensor<100000x100000xf32>
  return %x : tensor<?x?xf32>
}

func.func @wrap(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %o = arith.constant 4611686018427387904 : index
  %y = tile.slice %x [%o, %o] : tensor<?x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
