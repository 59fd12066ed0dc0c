//===- RowReciprocals.cpp - a / row value as a * (1 / row value) ----------===//
//
// The rewrite is the pass tile-row-reciprocals, which tile-lower-to-ptx
// runs right before convert-tile-to-gpu: the float64 reference (tile-run,
// tile.Kernel on the host) and the derivation run on the kernel as
// written; only the GPU code multiplies. A row value's reciprocal is a rank-1
// op the lowering computes once per row, a scalar's an op at kernel entry
// (Evaluator::evaluateUniforms).
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/Transforms/RowReciprocals.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::tile;

namespace {
/// The reciprocals made so far: of each denominator (a rank-1 row value or
/// an f32 scalar), and of each divisor shaped like it (its broadcast or
/// splat), each made once.
class Reciprocals {
public:
  /// 1 / `value`, placed right after `value` is defined so that every use
  /// of it can reach the reciprocal.
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

  /// `divisor` shaped as it is but holding reciprocals, placed right after
  /// it, if it is a row value broadcast along the columns or a splat
  /// scalar; null otherwise.
  Value like(Value divisor) {
    auto it = shaped.find(divisor);
    if (it != shaped.end())
      return it->second;
    Value reciprocal;
    Operation *def = divisor.getDefiningOp();
    OpBuilder b(divisor.getContext());
    if (def)
      b.setInsertionPointAfter(def);
    Location loc = divisor.getLoc();
    if (auto broadcast = dyn_cast_or_null<BroadcastOp>(def)) {
      if (broadcast.getDims() == ArrayRef<int64_t>{1})
        reciprocal = BroadcastOp::create(
            b, loc, divisor.getType(), of(broadcast.getInput()),
            broadcast.getDimsAttr(), broadcast.getShape());
    } else if (auto splat = dyn_cast_or_null<SplatOp>(def)) {
      reciprocal = SplatOp::create(b, loc, divisor.getType(),
                                   of(splat.getValue()), splat.getShape());
    }
    return shaped[divisor] = reciprocal;
  }

private:
  llvm::DenseMap<Value, Value> made, shaped;
};
} // namespace

bool mlir::tile::multiplyByRowReciprocals(func::FuncOp kernel, int64_t maxOps) {
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
    return false;
  // The multiply may not promise what the reciprocal can break: 1 / r is
  // infinite for a tiny r, and 0 * inf is NaN.
  auto keptFlags = [](arith::FastMathFlags flags) {
    return flags & ~(arith::FastMathFlags::nnan | arith::FastMathFlags::ninf);
  };
  Reciprocals reciprocals;
  llvm::SetVector<Operation *> divisors;
  bool changed = false;
  for (arith::DivFOp division : divisions) {
    Value divisor = division.getRhs();
    Value reciprocal = reciprocals.like(divisor);
    if (!reciprocal)
      continue;
    OpBuilder b(division);
    auto product = arith::MulFOp::create(
        b, division.getLoc(), division.getLhs(), reciprocal,
        arith::FastMathFlagsAttr::get(b.getContext(),
                                      keptFlags(division.getFastmath())));
    division.replaceAllUsesWith(product.getResult());
    division.erase();
    divisors.insert(divisor.getDefiningOp());
    changed = true;
  }
  // The broadcasts and splats only the divisions read.
  for (Operation *divisor : divisors)
    if (divisor->use_empty())
      divisor->erase();
  return changed;
}
