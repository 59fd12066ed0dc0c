// The kernel manifest: for each tile kernel, the GPU kernels, their
// parameters in order, the launch rule, the shape constraints and the
// workspace, in symbols a runtime evaluates without MLIR.
//
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -canonicalize -cse | tile-translate --tile-manifest | FileCheck %s
// RUN: tile-opt %tile_src/examples/silu_and_mul.mlir -tile-differentiate -canonicalize -cse | tile-translate --tile-manifest | FileCheck %s --check-prefix=SAM
// RUN: tile-opt %tile_src/examples/swiglu.mlir -tile-schedule=threads=128 | tile-translate --tile-manifest | FileCheck %s --check-prefix=SWIGLU
// RUN: not tile-translate --tile-manifest %s 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -canonicalize -cse -tile-schedule=fold-finalize | tile-translate --tile-manifest | FileCheck %s --check-prefix=FOLDED
//
// CHECK: "calling_convention": "one 64-bit device pointer per buffer
// RMSNorm forward: one CTA per row, no workspace.
// CHECK: "ctas": "rows",
// CHECK-NEXT: "function": "rms_norm",
// CHECK: "grid": "rows",
// CHECK-NEXT: "name": "rms_norm",
// CHECK: "shape_constraints": [
// CHECK-NEXT: "w1 == w0"
// CHECK: "workspace_f32_elements": "0"
// The backward: a persistent grid, a finalize, and a workspace of partials.
// CHECK: "ctas": "min(rows, 264)",
// CHECK-NEXT: "function": "rms_norm_bwd",
// CHECK-NEXT: "kernels": [
// CHECK: "grid": "min(rows, 264)",
// CHECK-NEXT: "name": "rms_norm_bwd",
// CHECK-NEXT: "static_shared_bytes": 256
// CHECK: "after": "rms_norm_bwd",
// CHECK-NEXT: "block": 256,
// CHECK-NEXT: "grid": "ceildiv(w4, 32)",
// CHECK-NEXT: "name": "rms_norm_bwd_finalize",
// CHECK-NEXT: "overlaps_previous": true,
// CHECK-NEXT: "static_shared_bytes": 1024
// Parameters: x, w, eps, offset, dy; dx, dw; rows; widths; ctas; workspace.
// CHECK: "params": [
// CHECK: "index": 0,
// CHECK-NEXT: "kind": "buffer",
// CHECK-NEXT: "of": "argument",
// CHECK: "dtype": "f32",
// CHECK-NEXT: "index": 2,
// CHECK-NEXT: "kind": "scalar",
// CHECK: "index": 1,
// CHECK-NEXT: "kind": "buffer",
// CHECK-NEXT: "of": "result",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: "w4"
// CHECK: "of": "rows"
// CHECK: "name": "w0",
// CHECK: "of": "ctas"
// CHECK: "of": "workspace"
// CHECK: "workspace_f32_elements": "ctas * w4"

// With `finalize = "folded"`, the finalize runs in the row kernel's last
// CTAs: one cooperative launch of at least one CTA (dw is written with no
// rows too), no second kernel, and the arrivals counter as a last parameter.
// FOLDED: "ctas": "min(rows, 264)",
// FOLDED-NEXT: "function": "rms_norm_bwd",
// FOLDED-NEXT: "kernels": [
// FOLDED-NEXT: {
// FOLDED-NEXT: "block": 256,
// FOLDED-NEXT: "cooperative": true,
// FOLDED-NEXT: "grid": "max(min(rows, 264), 1)",
// FOLDED-NEXT: "name": "rms_norm_bwd",
// FOLDED-NEXT: "static_shared_bytes": 1024
// FOLDED-NEXT: }
// FOLDED-NEXT: ],
// FOLDED: "of": "workspace"
// FOLDED: "dtype": "i32",
// FOLDED-NEXT: "kind": "buffer",
// FOLDED-NEXT: "of": "arrivals"
// FOLDED: "workspace_f32_elements": "ctas * w4"

// silu_and_mul: the output width is an expression of the input's, and the
// slices must stay in the row.
// SAM: "function": "silu_and_mul",
// SAM: "of": "result",
// SAM-NEXT: "shape": [
// SAM-NEXT: "rows",
// SAM-NEXT: "(w0 / 2)"
// SAM: "shape_constraints": [
// SAM-NEXT: "0 + (w0 / 2) <= w0",
// SAM-NEXT: "(w0 / 2) + (w0 / 2) <= w0"

// An element grid: a CTA per 128 threads × 8 bf16 of the flattened tensors.
// SWIGLU: "block": 128,
// SWIGLU-NEXT: "grid": "ceildiv(rows * w0, 1024)",

// NONE: error: @not_a_kernel is not a tile.kernel; tile-translate takes kernels only
func.func @not_a_kernel(%x: f32) -> f32 {
  return %x : f32
}
