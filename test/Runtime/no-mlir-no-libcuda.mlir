// The runtime links neither MLIR, nor LLVM, nor libcuda: a program built on
// it needs libc and the C++ runtime only, and finds the driver at run time.
//
// RUN: llvm-readelf -d %tile_obj/bin/tile-rt-info | FileCheck %s --check-prefix=NEEDED --implicit-check-not=libcuda --implicit-check-not=libLLVM --implicit-check-not=libMLIR
// RUN: llvm-nm -C -u %tile_obj/lib/libTileRuntime.a | FileCheck %s --check-prefix=SYMBOLS --implicit-check-not=mlir:: --implicit-check-not=llvm:: --implicit-check-not=cuInit --implicit-check-not=cuLaunchKernel
//
// NEEDED: (NEEDED) {{.*}}libc.so
// The driver's functions are looked up with dlsym, never linked.
// SYMBOLS-DAG: dlopen
// SYMBOLS-DAG: dlsym
