// tile-translate --tile-to-ptx takes tile IR too: it schedules and converts
// the kernels first, with the same pipeline builder tile-opt runs as
// tile-lower-to-ptx.
//
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -canonicalize -cse | tile-translate --tile-to-ptx --tile-chip=sm_90a | FileCheck %s
// RUN: tile-opt %tile_src/examples/swiglu.mlir --tile-lower-to-ptx="chip=sm_80" | FileCheck %s --check-prefix=OPT
// CHECK: // gpu.module @tile_kernels
// CHECK: .target sm_90a
// CHECK-DAG: .visible .entry rms_norm(
// CHECK-DAG: .visible .entry rms_norm_bwd(
// CHECK-DAG: .visible .entry rms_norm_bwd_finalize(
// OPT: gpu.binary @tile_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_80"
