//===- KernelEmitter.h - tile kernel → gpu.func ----------------*- C++ -*-===//
//
// Emits, for one analyzed kernel, a row kernel (one CTA per row, grid-stride
// over rows; threads stride over the columns, or hold a few fixed chunks of
// a row of constant width; row reductions by warp shuffles and shared
// memory; a purely elementwise kernel on an element grid instead takes one
// vector chunk of its flattened tensors per thread) and, when the kernel
// reduces across rows, a finalize kernel that sums the per-CTA partials in a
// fixed order.
//
// Both kernels take the same parameters, in this order (the manifest lists
// them): a pointer per tensor argument and a value per scalar argument, a
// pointer per result, the row count, the width of each tensor argument that
// has one, the row kernel's CTA count, and the fp32 workspace.
//
// The layers, each reading only those below it:
//
//   KernelEmitter.cpp   the gpu.funcs, their parameters and entry values
//   RowKernel.cpp       the looped rows and the element grid;
//   ResidentRows.cpp    the resident rows;
//   FinalizeKernel.cpp  the finalize's sums
//   BodyEmitter.cpp     row and column loops
//   PointEmitter.cpp       values at a point (RowExchange.cpp: row reductions)
//   KernelFrame.cpp     the kernel's parameters and builder helpers
//   KernelPlan.cpp      the decisions, made before any IR (also the manifest's)
//   KernelModel.cpp     the kinds of the values and the shape rules
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_KERNELEMITTER_H
#define TILE_LIB_CONVERSION_TILETOGPU_KERNELEMITTER_H

#include "KernelPlan.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::tile::gpu_lowering {

/// Adds the kernels of `model` to `module`. Returns failure with a
/// diagnostic for constructs it cannot emit.
LogicalResult emitKernels(const KernelModel &model, const Schedule &schedule,
                          gpu::GPUModuleOp module);

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_KERNELEMITTER_H
