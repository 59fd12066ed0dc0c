// tile-run reports bad usage with a message and exit status 1.
// RUN: not tile-run %s --function=f --args=7x13 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not tile-run %s --function=f --args=7by13,3 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not tile-run %s --function=f --args=7x13,abc 2>&1 | FileCheck %s --check-prefix=SCALAR
// RUN: not tile-run %s --function=f --args=7,3 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not tile-run %s --function=missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tile-run %s 2>&1 | FileCheck %s --check-prefix=WHICH
// RUN: not tile-run %s.does-not-exist 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: %expect-error tile-run %tile_src/test/Malformed/truncated_mid_op.mlir

// COUNT: error: @f takes 2 arguments but 1 were given
// SHAPE: error: argument #0: '7by13' is not a shape such as 7x13
// SCALAR: error: argument #1: 'abc' is not a number
// RANK: error: argument #0 (tensor<?x?xf32>): expected rank 2, got rank 1
// MISSING: error: no function @missing in
// WHICH: error: {{.*}} holds 2 tile kernels; choose one with --function
// NOFILE: error: cannot open input file

func.func @f(%x: tensor<?x?xf32>, %s: f32) -> tensor<?x?xf32> attributes {tile.kernel} {
  %v = tile.splat %s like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %v : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

func.func @g(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  return %x : tensor<?xf32>
}
