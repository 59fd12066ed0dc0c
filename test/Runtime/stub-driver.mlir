// REQUIRES: cuda-stub
// RUN: env TILE_LIBCUDA=%cuda_stub not tile-rt-info 2>&1 | FileCheck %s
// CHECK: error: no CUDA driver: {{.*}}stubs/libcuda.so is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), not a driver
