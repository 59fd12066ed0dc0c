// The embedding example compiles a user's kernel and its derived backward
// from a string; without a GPU it says why it cannot run them, and exits 0.
// UNSUPPORTED: cuda
// RUN: env TILE_CACHE_DIR=%t.cache TILE_LIBCUDA=%t.none.so tile-embed-example | FileCheck %s
// CHECK: compiled @gated_tanh and its derived @gated_tanh_bwd for sm_80
// CHECK: no GPU to run them on: no CUDA driver
