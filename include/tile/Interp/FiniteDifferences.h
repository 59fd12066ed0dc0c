//===- FiniteDifferences.h - numerical gradients, evaluated -----*- C++ -*-===//
//
// The ground truth for derived gradients: vector-Jacobian products of a tile
// function computed numerically with the float64 evaluator (exact mode, no
// storage rounding), by the fourth-order central difference
//
//   d/dt g(x + t·v) ≈ (8·(g(h) − g(−h)) − (g(2h) − g(−2h))) / 12h,
//
// where g(t) = Σ dy · f(x + t·v). Its truncation error is O(h⁴) and its
// rounding error O(ε/h); h is chosen per direction from a ladder of steps
// (1e-6 … 4e-3, scaled to the input) by estimating both, which keeps the
// result near 1e-10 relative for smooth kernels and for nearly flat or
// steep ones (RMSNorm at width 1) alike.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_INTERP_FINITEDIFFERENCES_H
#define TILE_INTERP_FINITEDIFFERENCES_H

#include "tile/Interp/Evaluator.h"

namespace tile::interp {

struct FiniteDifferenceOptions {
  /// Smallest step, relative to max(1, max|x|) over the moved elements.
  double relativeStep = 1e-6;
  /// Steps tried: relativeStep·4^k for k < steps; the one with the smallest
  /// estimated rounding + truncation error is used (see the .cpp).
  unsigned steps = 7;
  /// Each evaluation's limit (EvalOptions::maxElementOps): checkGradients
  /// gives each its share of the whole check's.
  int64_t maxElementOps = std::numeric_limits<int64_t>::max();
};

/// ⟨dy, f(x + t·v)⟩ differentiated at t = 0: the directional derivative of
/// the outputs along `direction`, weighted by the cotangents `dy` (one per
/// result). `direction` has one Buffer per argument; scalars and arguments
/// that should not move get zeros. Costs four evaluations per step tried.
llvm::Expected<double>
directionalDerivative(mlir::func::FuncOp func, const std::vector<Buffer> &args,
                      const std::vector<Buffer> &cotangents,
                      const std::vector<Buffer> &direction,
                      const FiniteDifferenceOptions &options = {});

/// The full vector-Jacobian product J(x)ᵀ·dy for argument `argIndex`, one
/// element at a time (four evaluations per element and step): for small shapes.
llvm::Expected<Buffer>
finiteDifferenceVJP(mlir::func::FuncOp func, const std::vector<Buffer> &args,
                    const std::vector<Buffer> &cotangents, unsigned argIndex,
                    const FiniteDifferenceOptions &options = {});

} // namespace tile::interp

#endif // TILE_INTERP_FINITEDIFFERENCES_H
