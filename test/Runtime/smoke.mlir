// REQUIRES: cuda
// The runtime alone runs the generated SwiGLU kernel on the GPU and matches
// a float64 reference, at a width that takes the vector path and one that
// does not.
// RUN: tile-translate --tile-to-ptx %tile_src/examples/swiglu.mlir -o %t.ptx
// RUN: tile-rt-smoke %t.ptx 4096 1000 | FileCheck %s
// RUN: tile-rt-smoke %t.ptx 13 333 | FileCheck %s
// CHECK: ok swiglu
