// REQUIRES: ptxas
// Every example and zoo kernel, forward and derived backward, at every
// storage type (bf16 replaced by f16 and f32) and both recompute
// policies, lowers to PTX that ptxas assembles for sm_80 and sm_90a with
// no unresolved libdevice function and no local-memory spills.
//
// RUN: %ptx-check %tile_src/examples/swiglu.mlir sm_80 bf16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/swiglu.mlir sm_90a bf16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/swiglu.mlir sm_80 f16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/swiglu.mlir sm_90a f16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/swiglu.mlir sm_80 f32 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/swiglu.mlir sm_90a f32 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/silu_and_mul.mlir sm_80 bf16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/silu_and_mul.mlir sm_90a bf16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/silu_and_mul.mlir sm_80 f16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/silu_and_mul.mlir sm_90a f16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/silu_and_mul.mlir sm_80 f32 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/silu_and_mul.mlir sm_90a f32 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/rms_norm.mlir sm_80 bf16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/rms_norm.mlir sm_90a bf16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/rms_norm.mlir sm_80 f16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/rms_norm.mlir sm_90a f16 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/rms_norm.mlir sm_80 f32 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/rms_norm.mlir sm_90a f32 | FileCheck %s
// RUN: %ptx-check %tile_src/examples/rms_norm.mlir sm_90a bf16 "policy=save-row-stats main-grad" | FileCheck %s
// RUN: %ptx-check %tile_src/examples/geglu.mlir sm_80 bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/examples/geglu.mlir sm_90a bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/layer_norm.mlir sm_80 bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/layer_norm.mlir sm_90a bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/softmax.mlir sm_80 bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/softmax.mlir sm_90a bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/examples/squared_relu.mlir sm_80 bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/examples/squared_relu.mlir sm_90a bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/residual_rms_norm.mlir sm_80 bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/residual_rms_norm.mlir sm_90a bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/three_uses.mlir sm_80 bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/three_uses.mlir sm_90a bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/logsumexp.mlir sm_80 bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/logsumexp.mlir sm_90a bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/soft_cross_entropy.mlir sm_80 bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/soft_cross_entropy.mlir sm_90a bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/min_max_scale.mlir sm_80 bf16 policy=save-row-stats | FileCheck %s
// RUN: %ptx-check %tile_src/test/Zoo/min_max_scale.mlir sm_90a bf16 policy=save-row-stats | FileCheck %s
//
// CHECK: ok: {{.*}} assembled, no spills
