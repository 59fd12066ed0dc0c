//===- RowReciprocals.cpp - a / row value as a * (1 / row value) ----------===//
//
// The rewrite runs on a kernel just before the GPU lowering (TileToGPU):
// the float64 reference, the derivation and the printed IR keep the
// division; only the generated code multiplies. A row value's reciprocal
// is a rank-1 op the lowering computes once per row, a scalar's an op at
// kernel entry (Evaluator::evaluateUniforms).
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

void mlir::tile::multiplyByRowReciprocals(func::FuncOp kernel) {
  SmallVector<arith::DivFOp> divisions;
  kernel.walk([&](arith::DivFOp division) {
    auto type = dyn_cast<RankedTensorType>(division.getType());
    if (type && type.getRank() == 2 && type.getElementType().isF32())
      divisions.push_back(division);
  });
  Reciprocals reciprocals;
  for (arith::DivFOp division : divisions) {
    OpBuilder b(division);
    Value reciprocal = reciprocalLike(division.getRhs(), reciprocals, b);
    if (!reciprocal)
      continue;
    auto product =
        arith::MulFOp::create(b, division.getLoc(), division.getLhs(),
                              reciprocal, division.getFastmathAttr());
    division.replaceAllUsesWith(product.getResult());
    division.erase();
  }
}
