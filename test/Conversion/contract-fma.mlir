// The GPU kernels let multiplies and adds contract into FMAs (as nvcc's
// -fmad=true does): every f32 add, sub and mul in a gpu.func carries
// `contract`, so LLVM writes fma.rn.f32 for a multiply feeding an add and
// plain mul.f32 / add.f32 elsewhere, never the `.rn` forms that forbid
// ptxas to fuse. The tile functions themselves are left as written.
// RUN: tile-opt %s -tile-schedule -convert-tile-to-gpu -o %t.mlir
// RUN: FileCheck %s --input-file=%t.mlir
// RUN: tile-translate --tile-to-ptx --tile-chip=sm_90a %t.mlir | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @sum_of_squares(
// CHECK: arith.mulf %{{.*}}, %{{.*}} : tensor<?x?xf32>
// CHECK-LABEL: gpu.func @sum_of_squares(
// CHECK-NOT: arith.mulf %{{[^ ]*}}, %{{[^ ]*}} : f32
// CHECK: arith.mulf {{.*}} fastmath<contract> : f32
// CHECK: arith.addf {{.*}} fastmath<contract> : f32
// CHECK: arith.subf {{.*}} fastmath<contract> : f32
// CHECK-NOT: arith.addf %{{[^ ]*}}, %{{[^ ]*}} : f32
// CHECK: gpu.return

// PTX-LABEL: .entry sum_of_squares(
// PTX: fma.rn.f32
// PTX-NOT: mul.rn.f32
// PTX-NOT: add.rn.f32
// PTX: ret;

func.func @sum_of_squares(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>)
    attributes {tile.kernel, tile.specialize = {w0 = 1024 : i64}} {
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %s = tile.reduce sum %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %d = arith.subf %x, %y : tensor<?x?xf32>
  return %d, %s : tensor<?x?xf32>, tensor<?xf32>
}
