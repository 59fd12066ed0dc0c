//===- InvariantRowStatistics.h - row maxima no result uses -----*- C++ -*-===//
//
// A softmax, a log-softmax or a logsumexp written without tile.stop_gradient
// subtracts its row's maximum for stability and does not depend on it: the
// derivative of every result with respect to the maximum is exactly 0. The
// reverse sweep would derive that 0 the long way (the maximum's cotangent
// as a sum that cancels to rounding noise, shared among the tied maxima:
// two more row reductions and a compare per element), so the
// differentiator treats such a maximum as a constant instead.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_DIALECT_TILE_TRANSFORMS_INVARIANTROWSTATISTICS_H
#define TILE_LIB_DIALECT_TILE_TRANSFORMS_INVARIANTROWSTATISTICS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::tile::detail {

/// The row maxima and minima (`tile.reduce max|min` of a rank-2 tensor over
/// its last dimension alone, without an accumulator) among `ops`, in program
/// order, that none of `results` changes with to first order, by the ops'
/// row-shift rules (DifferentiableOpInterface::propagateRowShift): each is
/// seeded as moving by δ and followed through every op after it.
llvm::DenseSet<Value> findInvariantRowStatistics(ArrayRef<Operation *> ops,
                                                 ValueRange results);

} // namespace mlir::tile::detail

#endif // TILE_LIB_DIALECT_TILE_TRANSFORMS_INVARIANTROWSTATISTICS_H
