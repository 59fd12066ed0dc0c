// RUN: tile-translate --tile-kernel-signature %tile_src/examples/rms_norm.mlir | FileCheck %s
// RUN: tile-translate --tile-kernel-signature %tile_src/examples/swiglu.mlir | FileCheck %s --check-prefix=SWIGLU
// RUN: %expect-error tile-translate --tile-kernel-signature %tile_src/test/Malformed/kernel_f64.mlir
// RUN: not tile-translate --tile-kernel-signature %s 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate=policy=save-row-stats | tile-translate --tile-kernel-signature | FileCheck %s --check-prefix=DERIVED

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

// Derived kernels say what each argument and result is.
// (JSON keys are printed in sorted order.)
// DERIVED: "name": "rms_norm",
// DERIVED: "role": "output"
// DERIVED: "forward_of": "rms_norm",
// DERIVED-NEXT: "name": "rms_norm_fwd",
// DERIVED: "of": 0,
// DERIVED-NEXT: "role": "saved",
// DERIVED: "of": 0,
// DERIVED-NEXT: "role": "cotangent",
// DERIVED: "of": 0,
// DERIVED-NEXT: "role": "saved",
// DERIVED: "backward_of": "rms_norm",
// DERIVED-NEXT: "name": "rms_norm_bwd",
// DERIVED: "of": 0,
// DERIVED-NEXT: "role": "gradient",
// DERIVED: "of": 1,
// DERIVED-NEXT: "role": "gradient",

// NONE: error: @not_a_kernel is not a tile.kernel; tile-translate takes kernels only
func.func @not_a_kernel(%x: f32) -> f32 {
  return %x : f32
}
