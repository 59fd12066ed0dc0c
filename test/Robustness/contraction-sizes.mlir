// A contraction's result is larger than its operands, and a dimension of
// size 0 bounds nothing: an operand of 2^26 x 0 against one the kernel
// widens to 0 x 2^38 once wrapped the result's size to 0 and wrote past it
// (a crash in the evaluator, found by review before the fuzzers did). The
// size is now checked, never wrapped, for both ops.
// RUN: %expect-error tile-run --function=wide --args=67108864x0,0x67108864 %s
// RUN: not tile-run --function=wide --args=67108864x0,0x67108864 %s 2>&1 | FileCheck %s --check-prefix=WIDE
//
// The fuzzers' first finding with contractions (tile-run harness, a
// timeout): this file's kernel gradient-checked at small shapes. Its
// contraction over a 1 x 4096 row the kernel made is 16.7 M products, over
// the shares the check's evaluations now get (the estimate, from 1 x 1
// arguments, could not see it), and ran for minutes across the finite
// differences; now refused at once.
// RUN: %expect-error tile-run --function=wide_rows --args=MxN --gradient-check --rows=1,3 --widths=1,7 %s
// RUN: not tile-run --function=wide_rows --args=MxN --gradient-check --rows=1,3 --widths=1,7 %s 2>&1 | FileCheck %s --check-prefix=CHECKED
// RUN: %expect-error tile-run --function=wide_rows --args=0x67108864 %s
// RUN: not tile-run --function=wide_rows --args=0x67108864 %s 2>&1 | FileCheck %s --check-prefix=ROWS

// WIDE: error: 'tile.contract': its result exceeds the evaluator's limit of 67108864 elements
// ROWS: error: 'tile.contract_rows': its result exceeds the evaluator's limit of 67108864 elements
// CHECKED: error: 'tile.contract_rows': takes 16777216 sums of 1 products, over the evaluator's limit of
func.func @wide(%x: tensor<?x?xf32>, %m: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %c1 = tile.concat %m, %m, %m, %m, %m, %m, %m, %m : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %c2 = tile.concat %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c1 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %c3 = tile.concat %c2, %c2, %c2, %c2, %c2, %c2, %c2, %c2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %c4 = tile.concat %c3, %c3, %c3, %c3, %c3, %c3, %c3, %c3 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = tile.contract %x, %c4 over 0 : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

func.func @wide_rows(%m: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %c1 = tile.concat %m, %m, %m, %m, %m, %m, %m, %m : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %c2 = tile.concat %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c1 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %c3 = tile.concat %c2, %c2, %c2, %c2, %c2, %c2, %c2, %c2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %c4 = tile.concat %c3, %c3, %c3, %c3, %c3, %c3, %c3, %c3 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = tile.contract_rows %c4, %c4 across_rows : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
