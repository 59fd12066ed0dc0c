//===- RowReciprocals.h - a / row value as a * (1 / row value) --*- C++ -*-===//
//
// Divides an element by a value shared across its row (or the whole
// kernel) by multiplying with that value's reciprocal, taken once per row
// (or per kernel) instead of once per element.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_TRANSFORMS_ROWRECIPROCALS_H
#define TILE_DIALECT_TILE_TRANSFORMS_ROWRECIPROCALS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace mlir::tile {

/// Rewrites every f32 element division `a / tile.broadcast(r) [1]` (a row
/// value) and `a / tile.splat(s)` (a scalar) in `kernel` as `a * (1 / r)`
/// (`a * (1 / s)`), the reciprocal computed once per row (per kernel),
/// correctly rounded, and shared by every division by the same value.
/// Leaves the kernel as it is if the rewrite could take its body past
/// `maxOps` ops (it adds at most four per division). Whether it changed
/// anything.
///
/// Why: an IEEE f32 division (`div.rn.f32`) is a reciprocal, Newton steps
/// and a range check with a slow path, about ten instructions where a
/// multiply is one; a min-max scaling's backward divided sixteen elements
/// per thread twice and was compute-bound at 0.6-0.8 of the copy ceiling.
///
/// The cost: two roundings instead of one, so the quotient is within about
/// 1 ulp (2^-23 relative) instead of 0.5; the inputs are f32 sums of
/// bf16/f16 or f32 values whose tolerances are far above that. The range
/// shrinks: a denominator of magnitude below about 2^-128 has an infinite
/// reciprocal (a finite quotient becomes infinite, 0 / r becomes NaN), and
/// one above 2^126 a subnormal reciprocal with fewer bits. Kernels that
/// divide by values that small add an epsilon first, as a norm or a
/// min-max scaling does. The multiply keeps the division's fastmath flags
/// but nnan and ninf, which the infinite reciprocal would break. Divisions
/// in f64, f16 or bf16 arithmetic and by per-element or per-column values
/// are left alone.
bool multiplyByRowReciprocals(func::FuncOp kernel, int64_t maxOps);

} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_TRANSFORMS_ROWRECIPROCALS_H
