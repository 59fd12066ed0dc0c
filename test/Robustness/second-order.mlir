// A derived function differentiated again: its primal arguments are plain
// inputs there, whatever role (tile.saved, tile.cotangent) they played for
// the first derivation. They once kept those roles, and the gradient check
// failed with "backward argument #5 of @rms_norm_bwd_bwd is saved value #0,
// which no forward variant returns" (issue 50).
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -tile-differentiate=policy=save-row-stats -o %t.mlir
// RUN: tile-run %t.mlir --function=rms_norm_bwd --gradient-check --args=MxN,N,1e-5,0,MxN,M --rows=3 --widths=5 | FileCheck %s

// CHECK: 4 gradients checked, 0 failed

