// REQUIRES: ptxas
// Every example, forward and derived backward, lowers to PTX for sm_80 and
// sm_90a that ptxas assembles without local-memory spills and with no
// unresolved libdevice function.
//
// RUN: tile-opt %tile_src/examples/swiglu.mlir -tile-differentiate -canonicalize -cse -convert-tile-to-gpu -o %t.swiglu.mlir
// RUN: tile-translate --tile-to-ptx %t.swiglu.mlir -o %t.swiglu.80.ptx
// RUN: FileCheck %s --check-prefix=PTX --implicit-check-not=__nv_ < %t.swiglu.80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.swiglu.80.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: tile-translate --tile-to-ptx --tile-chip=sm_90a %t.swiglu.mlir -o %t.swiglu.90.ptx
// RUN: %ptxas -arch=sm_90a -v %t.swiglu.90.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
//
// RUN: tile-opt %tile_src/examples/silu_and_mul.mlir -tile-differentiate -canonicalize -cse -convert-tile-to-gpu -o %t.sam.mlir
// RUN: tile-translate --tile-to-ptx %t.sam.mlir -o %t.sam.80.ptx
// RUN: FileCheck %s --check-prefix=PTX --implicit-check-not=__nv_ < %t.sam.80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sam.80.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: tile-translate --tile-to-ptx --tile-chip=sm_90a %t.sam.mlir -o %t.sam.90.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sam.90.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
//
// RUN: tile-opt %tile_src/examples/scaled_silu_and_mul.mlir -tile-differentiate -canonicalize -cse -convert-tile-to-gpu -o %t.ssam.mlir
// RUN: tile-translate --tile-to-ptx %t.ssam.mlir -o %t.ssam.80.ptx
// RUN: FileCheck %s --check-prefix=PTX --implicit-check-not=__nv_ < %t.ssam.80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.ssam.80.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: tile-translate --tile-to-ptx --tile-chip=sm_90a %t.ssam.mlir -o %t.ssam.90.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ssam.90.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
//
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate="policy=save-row-stats main-grad" -canonicalize -cse -convert-tile-to-gpu -o %t.rms.mlir
// RUN: tile-translate --tile-to-ptx %t.rms.mlir -o %t.rms.80.ptx
// RUN: FileCheck %s --check-prefix=RMS --implicit-check-not=__nv_ < %t.rms.80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.rms.80.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: tile-translate --tile-to-ptx --tile-chip=sm_90a %t.rms.mlir -o %t.rms.90.ptx
// RUN: %ptxas -arch=sm_90a -v %t.rms.90.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
//
// PTX: .visible .entry
// PTX: .visible .entry
// RMS-DAG: .visible .entry rms_norm(
// RMS-DAG: .visible .entry rms_norm_fwd(
// RMS-DAG: .visible .entry rms_norm_bwd(
// RMS-DAG: .visible .entry rms_norm_bwd_finalize(
// RMS-DAG: shfl.sync.bfly
// PTXAS: Compiling entry function
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
