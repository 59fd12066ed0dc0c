//===- GradientCheck.h - derived vs numerical gradients ---------*- C++ -*-===//
//
// Checks a derived backward against central finite differences of its
// forward, both in exact float64. For each differentiable argument x and a
// few random directions v, it compares ⟨dx, v⟩ from the backward with the
// directional derivative ⟨dy, J·v⟩ from finite differences. The error is
// relative to Σ|dx·v| — the size of the terms of the inner product — so a
// gradient that legitimately cancels (RMSNorm at width 1) is judged against
// the size of what cancelled, and a random v sees every element at once,
// which keeps the check fast at widths in the thousands.
//
// The backward's arguments and results are bound by their role attributes
// (tile.cotangent, tile.saved, tile.main_grad, tile.gradient), so any
// policy or main_grad variant is checked the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_INTERP_GRADIENTCHECK_H
#define TILE_INTERP_GRADIENTCHECK_H

#include "tile/Interp/FiniteDifferences.h"

namespace tile::interp {

struct GradientCheckOptions {
  /// Random directions per argument.
  unsigned directions = 4;
  /// Seeds the cotangents, main_grad contents and directions.
  uint64_t seed = 0;
  FiniteDifferenceOptions finiteDifferences;
  /// The element operations the whole check may take: every evaluation it
  /// makes (the forward, the backward, four per finite-difference step per
  /// direction per argument) times estimateElementOps. A check estimated
  /// above this is refused before it starts. 2^28 is about 5 s of a release
  /// build: the check is meant for small shapes (docs/Robustness.md).
  int64_t maxElementOps = int64_t(1) << 28;
};

struct ArgumentGradientError {
  /// Index of the forward argument.
  unsigned argument = 0;
  /// max over directions of |⟨dx,v⟩ − fd| / max(Σ|dx·v|, |fd|).
  double maxRelativeError = 0.0;
  /// The derived and numerical values at the worst direction.
  double derived = 0.0, numerical = 0.0;
};

/// Checks `backward` (and `forwardWithSaved`, which may be null) against
/// `forward` at `args`; one entry per differentiable argument.
llvm::Expected<std::vector<ArgumentGradientError>>
checkGradients(mlir::func::FuncOp forward, mlir::func::FuncOp backward,
               mlir::func::FuncOp forwardWithSaved,
               const std::vector<Buffer> &args,
               const GradientCheckOptions &options = {});

} // namespace tile::interp

#endif // TILE_INTERP_GRADIENTCHECK_H
