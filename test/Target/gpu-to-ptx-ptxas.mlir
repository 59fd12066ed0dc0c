// REQUIRES: ptxas
// The PTX of both targets assembles.
// RUN: tile-translate --tile-to-ptx %tile_src/test/Target/gpu-to-ptx.mlir -o %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 %t.sm80.ptx -o %t.sm80.cubin
// RUN: tile-translate --tile-to-ptx --tile-chip=sm_90a %tile_src/test/Target/gpu-to-ptx.mlir -o %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a %t.sm90a.ptx -o %t.sm90a.cubin
