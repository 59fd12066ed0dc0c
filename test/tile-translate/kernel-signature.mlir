// RUN: tile-translate --tile-kernel-signature %tile_src/examples/rms_norm.mlir | FileCheck %s
// RUN: tile-translate --tile-kernel-signature %tile_src/examples/swiglu.mlir | FileCheck %s --check-prefix=SWIGLU
// RUN: %expect-error tile-translate --tile-kernel-signature %tile_src/test/Malformed/kernel_f64.mlir
// RUN: not tile-translate --tile-kernel-signature %s 2>&1 | FileCheck %s --check-prefix=NONE

// CHECK: "kernels": [
// CHECK: "args": [
// CHECK: "differentiable": true,
// CHECK-NEXT: "dtype": "bf16",
// CHECK-NEXT: "kind": "tensor",
// CHECK: "differentiable": false,
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "kind": "scalar"
// CHECK: "name": "rms_norm",

// SWIGLU: "name": "swiglu",

// NONE: error: no function carries 'tile.kernel'
func.func @not_a_kernel(%x: f32) -> f32 {
  return %x : f32
}
