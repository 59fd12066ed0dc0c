//===- RowReciprocals.cpp - a / row value as a * (1 / row value) ----------===//
//
// The rewrite runs on a kernel inside convert-tile-to-gpu, just before its
// GPU code is emitted: the float64 reference (tile-run, tile.Kernel on the
// host) and the derivation run on the kernel as written; only the GPU code
// multiplies (and a module printed after convert-tile-to-gpu shows the
// rewritten kernel). A row value's reciprocal is a rank-1 op the lowering
// computes once per row, a scalar's an op at kernel entry
// (Evaluator::evaluateUniforms).
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/Transforms/RowReciprocals.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::tile;

namespace {
/// The reciprocals made so far, each once per denominator.
class Reciprocals {
public:
  /// 1 / `value` (a rank-1 row value or an f32 scalar), placed right after
  /// `value` is defined so that every use of it can reach the reciprocal.
  Value of(Value value) {
    Value &reciprocal = made[value];
    if (reciprocal)
      return reciprocal;
    OpBuilder b(value.getContext());
    b.setInsertionPointAfterValue(value);
    Location loc = value.getLoc();
    Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0));
    if (isa<RankedTensorType>(value.getType()))
      one = SplatOp::create(b, loc, value.getType(), one, value);
    reciprocal = arith::DivFOp::create(b, loc, one, value);
    return reciprocal;
  }

private:
  llvm::DenseMap<Value, Value> made;
};

/// `divisor` shaped like it but holding reciprocals, if it is a row value
/// broadcast along the columns or a splat scalar; null otherwise.
Value reciprocalLike(Value divisor, Reciprocals &reciprocals, OpBuilder &b) {
  Location loc = divisor.getLoc();
  if (auto broadcast = divisor.getDefiningOp<BroadcastOp>()) {
    if (broadcast.getDims() != ArrayRef<int64_t>{1})
      return {};
    return BroadcastOp::create(b, loc, divisor.getType(),
                               reciprocals.of(broadcast.getInput()),
                               broadcast.getDimsAttr(), broadcast.getShape());
  }
  if (auto splat = divisor.getDefiningOp<SplatOp>())
    return SplatOp::create(b, loc, divisor.getType(),
                           reciprocals.of(splat.getValue()), splat.getShape());
  return {};
}
} // namespace

void mlir::tile::multiplyByRowReciprocals(func::FuncOp kernel, int64_t maxOps) {
  SmallVector<arith::DivFOp> divisions;
  kernel.walk([&](arith::DivFOp division) {
    auto type = dyn_cast<RankedTensorType>(division.getType());
    if (type && type.getRank() == 2 && type.getElementType().isF32())
      divisions.push_back(division);
  });
  // Each division may add a constant, a splat, a division (the reciprocal)
  // and a broadcast or splat, and trade itself for a multiply.
  int64_t ops =
      static_cast<int64_t>(kernel.getBody().front().getOperations().size());
  if (divisions.empty() ||
      ops + 4 * static_cast<int64_t>(divisions.size()) > maxOps)
    return;
  // The multiply may not promise what the reciprocal can break: 1 / r is
  // infinite for a tiny r, and 0 * inf is NaN.
  auto keptFlags = [](arith::FastMathFlags flags) {
    return flags & ~(arith::FastMathFlags::nnan | arith::FastMathFlags::ninf);
  };
  Reciprocals reciprocals;
  for (arith::DivFOp division : divisions) {
    OpBuilder b(division);
    Value divisor = division.getRhs();
    Value reciprocal = reciprocalLike(divisor, reciprocals, b);
    if (!reciprocal)
      continue;
    auto product = arith::MulFOp::create(
        b, division.getLoc(), division.getLhs(), reciprocal,
        arith::FastMathFlagsAttr::get(b.getContext(),
                                      keptFlags(division.getFastmath())));
    division.replaceAllUsesWith(product.getResult());
    division.erase();
    if (Operation *def = divisor.getDefiningOp(); def && def->use_empty())
      def->erase();
  }
}
