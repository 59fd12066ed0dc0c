// RUN: tile-opt %tile_src/examples/scaled_silu_and_mul.mlir -tile-differentiate -canonicalize -cse --tile-schedule --convert-tile-to-gpu | FileCheck %s
// RUN: tile-opt %tile_src/examples/scaled_silu_and_mul.mlir -tile-differentiate -canonicalize -cse --tile-specialize-storage=dtype=f32 --tile-specialize-widths=widths=0:32768,2:16384 --tile-schedule --convert-tile-to-gpu | FileCheck %s --check-prefix=WIDE

// scaled_silu_and_mul's backward returns dx [rows, 2H] (result 0, %arg3)
// and the row sums ds [rows] (result 1, %arg4), which no column loop of dx
// needs. The MoE step runs it in place, dx over x: ds's pass must read x
// before any chunk of dx is stored, so its exchange (the shuffles) comes
// before the first store to dx in every body. At a dynamic width the
// looped body alone; at a specialized 32768 columns the resident body,
// then the looped one for misaligned buffers.
// CHECK-LABEL: gpu.func @scaled_silu_and_mul_bwd(
// CHECK-NOT: store {{.*}}, %arg3[
// CHECK: gpu.shuffle xor
// CHECK: store {{.*}}, %arg3[
// CHECK: memref.store {{.*}}, %arg4[

// WIDE-LABEL: gpu.func @scaled_silu_and_mul_bwd(
// WIDE-NOT: store {{.*}}, %arg3[
// WIDE: gpu.shuffle xor
// WIDE-NOT: store {{.*}}, %arg3[
// WIDE: memref.store {{.*}}, %arg10[
// WIDE: gpu.barrier
// WIDE: vector.store {{.*}}, %arg3[
// WIDE: memref.store {{.*}}, %arg4[
// The looped body: its reduction loop and exchange, then dx's stores.
// WIDE: scf.for
// WIDE-NOT: store {{.*}}, %arg3[
// WIDE: gpu.shuffle xor
// WIDE: store {{.*}}, %arg3[
