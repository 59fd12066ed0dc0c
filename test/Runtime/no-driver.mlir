// Without a driver the runtime says so and the tool exits 1; the toolkit's
// stub library is recognized for what it is.
//
// UNSUPPORTED: cuda
// RUN: env TILE_LIBCUDA=%t.no-such-libcuda.so not tile-rt-info 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: no CUDA driver: cannot open {{.*}}no-such-libcuda.so
// MISSING-SAME: install the NVIDIA driver or set TILE_LIBCUDA to libcuda's path
