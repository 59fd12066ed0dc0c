// Persistent grids are sized for the device tile-schedule is told of (an
// H100 SXM or H200 by default), and the lowering passes the CTAs per SM it
// assumed to ptxas; tile-translate's manifest and PTX agree on it.
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -tile-schedule | FileCheck %s --check-prefix=H100
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -tile-schedule=sms=114 | FileCheck %s --check-prefix=PCIE
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -tile-schedule="sms=114 registers-per-sm=16384" | FileCheck %s --check-prefix=REGS
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -tile-schedule="sms=108 threads-per-sm=256" | FileCheck %s --check-prefix=THREADS
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -tile-schedule="sms=78 shared-bytes-per-sm=1500" | FileCheck %s --check-prefix=SHARED
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate -tile-schedule=sms=114 -convert-tile-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate | tile-translate --tile-manifest --tile-sms=114 | FileCheck %s --check-prefix=MANIFEST
// RUN: %expect-error tile-opt -tile-schedule=sms=0 %tile_src/examples/rms_norm.mlir
// RUN: not tile-opt -tile-schedule=sms=0 %tile_src/examples/rms_norm.mlir 2>&1 | FileCheck %s --check-prefix=BAD

// H100-LABEL: func.func @rms_norm_bwd
// H100-SAME: ctas = 264 : i64, ctas_per_sm = 2 : i64, grid = "persistent"
// PCIE-LABEL: func.func @rms_norm_bwd
// PCIE-SAME: ctas = 228 : i64, ctas_per_sm = 2 : i64, grid = "persistent"
// 16384 registers leave 64 a thread for one 256-thread CTA per SM.
// REGS-LABEL: func.func @rms_norm_bwd
// REGS-SAME: ctas = 114 : i64, ctas_per_sm = 1 : i64, grid = "persistent"
// THREADS-LABEL: func.func @rms_norm_bwd
// THREADS-SAME: ctas = 108 : i64, ctas_per_sm = 1 : i64, grid = "persistent"
// 256 threads take 256 bytes of exchange slots and 1 KiB reserved a CTA.
// SHARED-LABEL: func.func @rms_norm_bwd
// SHARED-SAME: ctas = 78 : i64, ctas_per_sm = 1 : i64, grid = "persistent"
// GPU-LABEL: gpu.func @rms_norm_bwd(
// GPU-SAME: nvvm.minctasm = 2 : i32
// MANIFEST: "ctas": "min(rows, 228)"
// BAD: rms_norm.mlir:{{[0-9]+}}:{{[0-9]+}}: error: tile-schedule: the device description (sms=0 threads-per-sm=2048 registers-per-sm=65536 shared-bytes-per-sm=233472) is not a GPU's
