// REQUIRES: cuda
// On a GPU machine the runtime finds the device and picks its chip.
// RUN: tile-rt-info | FileCheck %s
// CHECK: device: NVIDIA
// CHECK: compute capability: {{[0-9]+}}.{{[0-9]+}}
// CHECK: target chip: sm_{{[0-9]+}}
