// tile-translate --tile-to-ptx takes tile IR too: it schedules and converts
// the kernels first, with the same pipeline builder tile-opt runs as
// tile-lower-to-ptx.
//
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -canonicalize -cse | tile-translate --tile-to-ptx --tile-chip=sm_90a | FileCheck %s
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -canonicalize -cse | tile-translate --tile-to-ptx --tile-chip=sm_90a | FileCheck %s --check-prefix=PDL
// RUN: tile-opt %tile_src/examples/swiglu.mlir --tile-lower-to-ptx="chip=sm_80" | FileCheck %s --check-prefix=OPT
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -canonicalize -cse -tile-schedule=fold-finalize | tile-translate --tile-to-ptx --tile-chip=sm_90a | FileCheck %s --check-prefix=FOLDED
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -canonicalize -cse | tile-translate --tile-to-ptx --tile-chip=sm_80 | FileCheck %s --check-prefix=SM80
// CHECK: // gpu.module @tile_kernels
// CHECK: .target sm_90a
// CHECK-DAG: .visible .entry rms_norm(
// CHECK-DAG: .visible .entry rms_norm_bwd(
// CHECK-DAG: .visible .entry rms_norm_bwd_finalize(
// The finalize, launched to overlap the row kernel's end (sm_90 on), waits
// for it before it loads a partial; the row kernels signal nothing early.
// PDL-LABEL: .entry rms_norm(
// PDL-NOT: griddepcontrol
// PDL-LABEL: .entry rms_norm_bwd(
// PDL-NOT: griddepcontrol
// PDL-LABEL: .entry rms_norm_bwd_finalize(
// PDL-NOT: ld.global
// PDL: griddepcontrol.wait;
// PDL: ld.global
// A folded finalize (finalize = "folded"): no second kernel; each CTA
// releases its partials and takes a ticket, the last ones poll with acquire
// loads until every CTA has arrived, sum the partials, then take a second
// ticket, and the last of them resets the counter. No sequentially
// consistent fence anywhere.
// FOLDED-NOT: .entry rms_norm_bwd_finalize(
// FOLDED-LABEL: .entry rms_norm_bwd(
// FOLDED-NOT: membar
// FOLDED: fence.acq_rel.gpu;
// FOLDED-NEXT: atom.global.add.u32
// FOLDED-NOT: membar
// FOLDED: ld.acquire.gpu.global.b32
// FOLDED-NOT: membar
// FOLDED: ld.global.b32
// FOLDED: st.global.b16
// FOLDED: atom.global.add.u32
// FOLDED: st.relaxed.gpu.global.b32 [{{.*}}], 0;
// FOLDED-NOT: .entry rms_norm_bwd_finalize(
// Older chips have no griddepcontrol: the pipeline drops it.
// SM80: .target sm_80
// SM80-NOT: griddepcontrol
// OPT: gpu.binary @tile_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_80"
