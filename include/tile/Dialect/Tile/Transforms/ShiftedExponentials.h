//===- ShiftedExponentials.h - exp(x - max x) by ex2.approx -*- C++ -*-===//
//-*-===//
//
// Marks the exponentials a softmax or a logsumexp takes of its row shifted
// by the row's maximum as approximable (fastmath afn, lowered to
// ex2.approx), the exponential Triton and Liger use everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_TRANSFORMS_SHIFTEDEXPONENTIALS_H
#define TILE_DIALECT_TILE_TRANSFORMS_SHIFTEDEXPONENTIALS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tile {

/// Sets fastmath<afn> on every `math.exp` of `x - broadcast(m)` in `kernel`
/// where m is the maximum of x along the broadcast dimensions (directly or
/// through tile.stop_gradient). Its argument is at most 0 and its row holds
/// a 1, so the approximation's error (2 ulp, plus |d| * log2(e) * 2^-24
/// relative from rounding d * log2(e), flushed to 0 below d = -87.3) is
/// below what any sum or quotient with that row can see; every other
/// exponential keeps libdevice's accurate expf. The derived backward
/// clones the forward's exponentials with their attributes, so it runs
/// the same approximation where this ran before tile-differentiate (as
/// the pass tile-approximate-shifted-exponentials does in the JIT).
void approximateShiftedExponentials(func::FuncOp kernel);

} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_TRANSFORMS_SHIFTEDEXPONENTIALS_H
