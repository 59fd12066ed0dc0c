// tile-run evaluates any function of any file on seeded inputs.
// RUN: tile-run %tile_src/examples/swiglu.mlir --args=7x13,7x13 --seed=3 | FileCheck %s --check-prefix=SWIGLU
// RUN: tile-run %tile_src/examples/silu_and_mul.mlir --args=13x2000 | FileCheck %s --check-prefix=SILU
// RUN: tile-run %tile_src/examples/rms_norm.mlir --args=7x1000,1000,1e-6,1 | FileCheck %s --check-prefix=RMS
// The same seed gives the same bits; another seed does not.
// RUN: tile-run %tile_src/examples/swiglu.mlir --args=7x13,7x13 --seed=3 > %t.a
// RUN: tile-run %tile_src/examples/swiglu.mlir --args=7x13,7x13 --seed=3 > %t.b
// RUN: tile-run %tile_src/examples/swiglu.mlir --args=7x13,7x13 --seed=4 > %t.c
// RUN: diff %t.a %t.b
// RUN: not diff %t.a %t.c

// SWIGLU: function @swiglu  seed 3
// SWIGLU: result #0
// SWIGLU-NEXT: type: tensor<?x?xbf16>  shape: [7, 13]
// SWIGLU-NEXT: count: 91  non-finite: 0
// SWIGLU: checksum: {{[0-9a-f]+}}

// SILU: result #0
// SILU-NEXT: shape: [13, 1000]
// SILU-NEXT: count: 13000  non-finite: 0

// RMS: result #0
// RMS-NEXT: shape: [7, 1000]
// RMS-NEXT: count: 7000  non-finite: 0
