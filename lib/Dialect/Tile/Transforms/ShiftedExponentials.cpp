//===- ShiftedExponentials.cpp - exp(x - max x) by the hardware's exp2 ---===//
//
// Why: libdevice's expf is ten instructions around one MUFU.EX2 (range
// reduction in three FMAs, a rounding trick, a scale); ex2.approx(d *
// log2 e) is two. In a cross-entropy over 128256 columns that was two
// thirds of the forward's instructions per element, and the forward was
// compute-bound (docs/Performance.md).
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/Transforms/ShiftedExponentials.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::tile;

/// Whether `value` is the maximum of `x` along `dims`, possibly behind a
/// stop_gradient.
static bool isMaxOf(Value value, Value x, ArrayRef<int64_t> dims) {
  if (auto stop = value.getDefiningOp<StopGradientOp>())
    value = stop.getInput();
  auto max = value.getDefiningOp<ReduceOp>();
  return max && max.getKind() == ReductionKind::Max && !max.getInit() &&
         max.getInput() == x && max.getDims() == dims;
}

void mlir::tile::approximateShiftedExponentials(func::FuncOp kernel) {
  kernel.walk([](math::ExpOp exp) {
    auto shifted = exp.getOperand().getDefiningOp<arith::SubFOp>();
    auto broadcast =
        shifted ? shifted.getRhs().getDefiningOp<BroadcastOp>() : BroadcastOp();
    if (!broadcast ||
        !isMaxOf(broadcast.getInput(), shifted.getLhs(), broadcast.getDims()))
      return;
    exp.setFastmath(exp.getFastmath() | arith::FastMathFlags::afn);
  });
}
