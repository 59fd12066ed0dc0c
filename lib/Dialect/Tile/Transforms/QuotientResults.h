//===- QuotientResults.h - a backward through a quotient --------*- C++ -*-===//
//-*-//
//
// A softmax returns y = e / broadcast(s), s = Σ e. Its derived backward is
// dx = (g/s − Σ(g·y/s)) · e: it needs e, so it recomputes e from x and
// reads x. PyTorch's hand-written softmax backward reads only the y its
// forward wrote (often still in L2): y · (g − Σ g·y). The two are equal by
// algebra the reverse sweep does not do: (Q / s) · e = Q · (e / s) = Q · y.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_DIALECT_TILE_TRANSFORMS_QUOTIENTRESULTS_H
#define TILE_LIB_DIALECT_TILE_TRANSFORMS_QUOTIENTRESULTS_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/ValueRange.h"

namespace mlir::tile::detail {

/// For each rank-2 forward result (recomputed in `body` as
/// `recomputedResults`, possibly through a cast) that is a quotient
/// `e / broadcast(s)` of a row value s: rewrites each product `P · e` of the
/// sweep (not among the `recomputed` forward ops) where
/// P divides by the same row value (P = Q / s through sums, differences,
/// negations, products, row broadcasts and row sums) as `Q · quotient`.
/// The rewrite stays only where reading the quotient from the forward then
/// stops the backward reading a rank-2 primal input (readingFreesAnInput),
/// so that nextForwardResult chooses it; elsewhere it is undone, and the
/// ops it made are left for the differentiator's dead-op sweep.
void expressThroughQuotients(Block *body, unsigned numPrimals,
                             ArrayRef<Operation *> recomputed,
                             ValueRange recomputedResults);

} // namespace mlir::tile::detail

#endif // TILE_LIB_DIALECT_TILE_TRANSFORMS_QUOTIENTRESULTS_H
