// Every example round-trips through tile-opt in custom and generic form, and
// stays the same kernel after canonicalize + cse.
// RUN: tile-opt %tile_src/examples/swiglu.mlir | tile-opt | FileCheck %s --check-prefix=SWIGLU
// RUN: tile-opt %tile_src/examples/swiglu.mlir --mlir-print-op-generic | tile-opt | FileCheck %s --check-prefix=SWIGLU
// RUN: tile-opt %tile_src/examples/swiglu.mlir -canonicalize -cse | FileCheck %s --check-prefix=SWIGLU
// RUN: tile-opt %tile_src/examples/silu_and_mul.mlir | tile-opt | FileCheck %s --check-prefix=SILU
// RUN: tile-opt %tile_src/examples/silu_and_mul.mlir --mlir-print-op-generic | tile-opt | FileCheck %s --check-prefix=SILU
// RUN: tile-opt %tile_src/examples/silu_and_mul.mlir -canonicalize -cse | FileCheck %s --check-prefix=SILU
// RUN: tile-opt %tile_src/examples/rms_norm.mlir | tile-opt | FileCheck %s --check-prefix=RMS
// RUN: tile-opt %tile_src/examples/rms_norm.mlir --mlir-print-op-generic | tile-opt | FileCheck %s --check-prefix=RMS
// RUN: tile-opt %tile_src/examples/rms_norm.mlir -canonicalize -cse | FileCheck %s --check-prefix=RMS

// SWIGLU-LABEL: func.func @swiglu
// SWIGLU-SAME: (%[[A:.*]]: tensor<?x?xbf16>, %[[B:.*]]: tensor<?x?xbf16>) -> tensor<?x?xbf16> attributes {tile.kernel}
// SWIGLU-DAG: %[[AF:.*]] = tile.cast %[[A]] : tensor<?x?xbf16> to tensor<?x?xf32>
// SWIGLU-DAG: %[[BF:.*]] = tile.cast %[[B]] : tensor<?x?xbf16> to tensor<?x?xf32>
// SWIGLU: %[[S:.*]] = tile.sigmoid %[[AF]] : tensor<?x?xf32>
// SWIGLU: %[[SL:.*]] = arith.mulf %[[AF]], %[[S]] : tensor<?x?xf32>
// SWIGLU: %[[C:.*]] = arith.mulf %[[SL]], %[[BF]] : tensor<?x?xf32>
// SWIGLU: %[[CB:.*]] = tile.cast %[[C]] : tensor<?x?xf32> to tensor<?x?xbf16>
// SWIGLU: return %[[CB]]

// SILU-LABEL: func.func @silu_and_mul
// SILU-SAME: (%[[X:.*]]: tensor<?x?xbf16>) -> tensor<?x?xbf16> attributes {tile.kernel}
// SILU: %[[W:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x?xbf16>
// SILU: %[[H:.*]] = arith.divui %[[W]], %{{.*}} : index
// SILU: %[[A:.*]] = tile.slice %[[X]][%{{.*}}, %[[H]]]
// SILU: %[[B:.*]] = tile.slice %[[X]][%[[H]], %[[H]]]
// SILU: tile.sigmoid
// SILU: return

// RMS-LABEL: func.func @rms_norm
// RMS-SAME: %{{.*}}: f32 {tile.nograd}, %{{.*}}: f32 {tile.nograd}) -> tensor<?x?xbf16> attributes {tile.kernel}
// RMS: tile.reduce mean %{{.*}} [1] : tensor<?x?xf32> -> tensor<?xf32>
// RMS: math.rsqrt
// RMS: tile.broadcast %{{.*}} [1] like
// RMS: tile.broadcast %{{.*}} [0] like
// RMS: return
