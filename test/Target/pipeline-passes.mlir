// The PTX pipeline's own steps, each a pass: tile-drop-griddepcontrol
// removes the early-launch wait for chips before sm_90, and
// tile-check-target refuses a chip Tile does not know and a missing
// libdevice.
// RUN: tile-opt %s --pass-pipeline='builtin.module(gpu.module(tile-drop-griddepcontrol))' | FileCheck %s
// RUN: not tile-opt %s --pass-pipeline='builtin.module(tile-check-target{chip=h100 libdevice=%s})' 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not tile-opt %s --pass-pipeline='builtin.module(tile-check-target{chip=sm_90a libdevice=%t.missing.bc})' 2>&1 | FileCheck %s --check-prefix=LIB
// RUN: tile-opt %s --pass-pipeline='builtin.module(tile-check-target{chip=sm_90a libdevice=%s})' | FileCheck %s --check-prefix=OK
//
// CHECK-LABEL: gpu.func @finalize(
// CHECK-NOT: griddepcontrol
// CHECK: gpu.return
// CHIP: error: unknown chip 'h100': Tile compiles for sm_80,
// LIB: error: libdevice not found at '{{.*}}.missing.bc'
// OK: nvvm.griddepcontrol wait
module attributes {gpu.container_module} {
  gpu.module @tile_kernels {
    gpu.func @finalize() kernel {
      nvvm.griddepcontrol wait
      gpu.return
    }
  }
}
