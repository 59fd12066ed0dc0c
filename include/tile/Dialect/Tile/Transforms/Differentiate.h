//===- Differentiate.h - reverse-mode differentiation -----------*- C++ -*-===//
//
// The C++ entry point behind the tile-differentiate pass, for tools and the
// JIT that derive one kernel's backward without running a pass pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_TRANSFORMS_DIFFERENTIATE_H
#define TILE_DIALECT_TILE_TRANSFORMS_DIFFERENTIATE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace mlir::tile {

/// What the backward may keep from the forward.
enum class RecomputePolicy {
  /// Recompute every forward intermediate from the primal inputs.
  Recompute,
  /// Save per-row values (O(rows)) the cost model prefers to store.
  SaveRowStats,
};

struct DifferentiateOptions {
  RecomputePolicy policy = RecomputePolicy::Recompute;
  /// Accumulate cross-row gradients into fp32 main_grad arguments.
  bool mainGrad = false;
  /// Row width the cost model assumes where the width is dynamic.
  int64_t rowWidthHint = 4096;
  /// The backward also returns the forward's results (tile.primal), which
  /// it recomputes anyway: a caller that needs both (the tiled MLP's
  /// backward needs h = swiglu(g, u)) saves a separate forward pass.
  bool returnPrimal = false;
};

/// "recompute" or "save-row-stats": the spelling of the pass option, the
/// tools and tile::jit.
inline const char *getRecomputePolicyName(RecomputePolicy policy) {
  return policy == RecomputePolicy::SaveRowStats ? "save-row-stats"
                                                 : "recompute";
}

struct DerivedKernel {
  /// `@f_bwd`.
  func::FuncOp backward;
  /// `@f_fwd`, which also returns the saved values; null when nothing is
  /// saved (then `@f` itself is the forward).
  func::FuncOp forwardWithSaved;
};

/// Adds the backward of the kernel `forward` (and, when values are saved, the
/// forward variant) to the module that holds it. Emits a diagnostic at the
/// offending op and fails on what it cannot differentiate; the module is
/// left unchanged then.
FailureOr<DerivedKernel>
differentiateKernel(func::FuncOp forward,
                    const DifferentiateOptions &options = {});

} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_TRANSFORMS_DIFFERENTIATE_H
