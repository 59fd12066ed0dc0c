//===- RowExchange.h - row reductions through shared memory -----*- C++ -*-===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_ROWEXCHANGE_H
#define TILE_LIB_CONVERSION_TILETOGPU_ROWEXCHANGE_H

#include "KernelFrame.h"

namespace mlir::tile::gpu_lowering {

/// The exchanges of one row: each reduces every thread's values over the
/// row's group of threads, within each warp by shuffles and across warps
/// through shared memory. Consecutive exchanges alternate between two sets
/// of slots, across rows too, so one barrier each suffices: a thread writes
/// a set again only after the barrier of the exchange in between, which
/// every thread reaches after reading that set. A group of at most a warp
/// (a power of two of aligned lanes) needs only its xor shuffles: no slots,
/// no barrier, and the parity never moves.
class RowExchange {
public:
  explicit RowExchange(KernelFrame &frame) : f(frame) {}

  /// Starts a row whose first exchange takes the set `parity` (0 or 1,
  /// carried by the row loop).
  void beginRow(Value parity) {
    rowParity = parity;
    exchanges = 0;
  }
  /// Reduces each value (at most kMaxFusedReductions) by its kind; every
  /// thread of the group gets the totals, in the same order on every run.
  SmallVector<Value> reduce(ArrayRef<ReductionKind> kinds,
                            SmallVector<Value> values);
  /// Ends the row: the parity the next row starts with, for the loop to
  /// carry.
  Value finishRow();

private:
  KernelFrame &f;
  Value rowParity;
  int64_t exchanges = 0;
};

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_ROWEXCHANGE_H
