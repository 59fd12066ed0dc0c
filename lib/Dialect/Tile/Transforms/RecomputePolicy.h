//===- RecomputePolicy.h - what the backward saves --------------*- C++ -*-===//
//
// The backward first recomputes the whole forward. The policy then picks the
// recomputed values that the backward should rather receive from the forward
// (as extra forward outputs): those marked `tile.save`, and under
// save-row-stats the per-row values whose recomputation the cost model
// prices above storing them.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_DIALECT_TILE_TRANSFORMS_RECOMPUTEPOLICY_H
#define TILE_LIB_DIALECT_TILE_TRANSFORMS_RECOMPUTEPOLICY_H

#include "tile/Dialect/Tile/Transforms/Differentiate.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <limits>
#include <optional>

namespace mlir::tile::detail {

/// Values already classified by isRowStatistic.
using RowStatisticMemo = llvm::DenseMap<Value, bool>;

/// True for a value with one element per row: a reduction over exactly the
/// last dimension, or elementwise math, casts and splats of such values.
/// Linear in the values it has not classified before (`memo`).
bool isRowStatistic(Value value, RowStatisticMemo &memo);

/// The cost model, in f32-operation equivalents per row.
struct RecomputeCost {
  /// Saving costs a 4-byte write in the forward and a 4-byte read in the
  /// backward, per row and value.
  static constexpr double kBytesPerSavedValue = 8.0;
  /// An H100 does ~67 TFLOP/s of f32 against ~3.35 TB/s of HBM3: about 20
  /// operations take as long as moving one byte.
  static constexpr double kOperationsPerByte = 20.0;
  /// A CTA-wide reduction: shuffle rounds plus two barriers, worth a few
  /// hundred operations of a row's time.
  static constexpr double kReductionSync = 512.0;

  static double save() { return kBytesPerSavedValue * kOperationsPerByte; }
  /// What recomputing `value` costs: every op of its slice among
  /// `recomputed`, a full-row op `rowWidth` operations (the static width
  /// where known), a per-row op one, a row reduction its width plus the sync.
  /// The walk stops once the cost passes `stopAbove`.
  static double
  recompute(Value value, const llvm::DenseSet<Operation *> &recomputed,
            int64_t rowWidthHint, RowStatisticMemo &memo,
            double stopAbove = std::numeric_limits<double>::infinity());
};

/// The recomputed values (in `recomputed` order) the backward should take as
/// saved inputs instead. Only values the backward still needs qualify: read
/// by a derivative rule, or by the recomputation of such a value, and not
/// already cut off by a later saved value.
SmallVector<Value> chooseSavedValues(ArrayRef<Operation *> recomputed,
                                     const DifferentiateOptions &options);

/// A forward result the backward reads instead of recomputing it: result
/// `result` of the forward, for the backward's value `replaced` (the
/// recomputed result, or the f32 value a 16-bit result rounds).
struct ForwardResultRead {
  unsigned result;
  Value replaced;
};

/// The next rank-2 forward result (recomputed in `body` as
/// `recomputedResults`) the backward should read as an argument: one it
/// needs whose recomputation alone reads a rank-2 primal tensor argument
/// (of the first `numPrimals` of `body`), which it then stops reading.
/// None when no result qualifies; the caller replaces each one before
/// asking again, so that two results never both free the same input. The
/// choice does not depend on the storage dtype a kernel is specialized
/// for.
std::optional<ForwardResultRead>
nextForwardResult(Block *body, unsigned numPrimals,
                  ValueRange recomputedResults);

/// The value of the backward that reading forward result `result`
/// (recomputed) would replace: the result, or the f32 value its rounding
/// cast makes it from; null for a result that is not a computed rank-2
/// tensor.
Value valueReadFor(Value result);

/// Whether reading `value` from elsewhere than its definition stops the ops
/// that reach `body`'s return from reading the data of some rank-2 primal
/// tensor argument (of the first `numPrimals`). Uses for a shape alone read
/// nothing.
bool readingFreesAnInput(Block *body, unsigned numPrimals, Value value);

} // namespace mlir::tile::detail

#endif // TILE_LIB_DIALECT_TILE_TRANSFORMS_RECOMPUTEPOLICY_H
