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
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_KERNELEMITTER_H
#define TILE_LIB_CONVERSION_TILETOGPU_KERNELEMITTER_H

#include "KernelModel.h"
#include "tile/Dialect/Tile/IR/KernelSchedule.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::tile::gpu_lowering {

/// The lowering follows the kernel's tile.schedule as it is.
using Schedule = KernelSchedule;

/// The row kernel's exchange slots (KernelSchedule.h, where tile-schedule
/// counts them against the device's shared memory).
using ::mlir::tile::kMaxFusedReductions;
using ::mlir::tile::rowSharedFloats;

/// At most this many partial rows a finalize thread loads before it adds
/// them (in order): the loads of a warp's rows are in flight together
/// (sumPartials).
constexpr int64_t kMaxFinalizeUnroll = 36;

/// Columns one finalize CTA sums (its grid is ceildiv(width, this)); its
/// warps split the partial rows.
constexpr int64_t kFinalizeColumns = 32;

/// Adds the kernels of `model` to `module` (created if null). Returns
/// failure with a diagnostic for constructs it cannot emit.
LogicalResult emitKernels(const KernelModel &model, const Schedule &schedule,
                          gpu::GPUModuleOp module);

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_KERNELEMITTER_H
