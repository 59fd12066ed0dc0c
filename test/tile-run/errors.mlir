// tile-run reports bad usage with a message and exit status 1.
// RUN: not tile-run %s --function=f --args=7x13 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not tile-run %s --function=f --args=7by13,3 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not tile-run %s --function=f --args=7x13,abc 2>&1 | FileCheck %s --check-prefix=SCALAR
// RUN: not tile-run %s --function=f --args=7,3 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not tile-run %s --function=missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tile-run %s 2>&1 | FileCheck %s --check-prefix=WHICH
// RUN: not tile-run %s.does-not-exist 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: %expect-error tile-run %tile_src/test/Malformed/truncated_mid_op.mlir
// RUN: not tile-run %s --function=f --args=,3 --input=y=%s 2>&1 | FileCheck %s --check-prefix=NONAME
// RUN: not tile-run %s --function=f --args=,3 --input=x=%s 2>&1 | FileCheck %s --check-prefix=NOTNPY
// RUN: not tile-run %s --function=f --args=,3 --input=x=%t.missing.npy 2>&1 | FileCheck %s --check-prefix=NOINPUT
// RUN: not tile-run %s --function=f --args=,3 2>&1 | FileCheck %s --check-prefix=NOSPEC
// RUN: not tile-run %s --function=f --args=7x13,3 --bench 2>&1 | FileCheck %s --check-prefix=BENCH
// RUN: not tile-run %s --function=f --args=7x13,3 --main-grad 2>&1 | FileCheck %s --check-prefix=MAINGRAD
// RUN: not tile-run %s --function=f --args=MxN,3 --rows=1,2 --output-dir=%t 2>&1 | FileCheck %s --check-prefix=ONECASE

// COUNT: error: @f takes 2 arguments (x, s) but --args gives 1
// SHAPE: error: argument #0: '7by13' is not a shape such as 7x13
// SCALAR: error: argument #1: 'abc' is not a number
// RANK: error: argument #0 (tensor<?x?xf32>): expected rank 2, got rank 1
// MISSING: error: no function @missing in
// WHICH: error: {{.*}} holds 2 tile kernels; choose one with --function
// NOFILE: error: cannot open input file
// NONAME: error: --input=y={{.*}}: no argument 'y'; the arguments are x, s (or their indices)
// NOTNPY: error: {{.*}}errors.mlir: not a .npy file (no \x93NUMPY magic)
// NOINPUT: error: {{.*}}missing.npy: No such file or directory
// NOSPEC: error: argument 'x': no spec in --args and no --input file
// BENCH: error: --bench and --specialize-widths are for the GPU: add --device
// MAINGRAD: error: --main-grad applies to --gradient-check
// ONECASE: error: --output-dir writes one case

func.func @f(%x: tensor<?x?xf32>, %s: f32) -> tensor<?x?xf32> attributes {tile.kernel} {
  %v = tile.splat %s like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %v : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

func.func @g(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  return %x : tensor<?xf32>
}
