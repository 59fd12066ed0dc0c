//===- RecomputePolicy.cpp - which forward values the backward saves -----===//
//
// Saving a full-size intermediate would double the memory traffic of an
// elementwise kernel, so the automatic policy only ever considers per-row
// values, whose storage is O(rows). For those the question is whether one
// 4-byte store and load per row beats recomputing them, which for anything
// computed by a row reduction (RMSNorm's rstd, softmax's max and sum) it does
// at every width: the reduction's synchronization alone outweighs it.
//
//===----------------------------------------------------------------------===//

#include "RecomputePolicy.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::tile;

bool tile::detail::isRowStatistic(Value value) {
  Operation *def = value.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!def || !type)
    return false;
  if (auto reduce = dyn_cast<ReduceOp>(def)) {
    int64_t rank = reduce.getInput().getType().getRank();
    return rank >= 1 && reduce.getDims() == ArrayRef<int64_t>{rank - 1} &&
           !reduce.getInit();
  }
  if (auto splat = dyn_cast<SplatOp>(def))
    return isRowStatistic(splat.getShape());
  if (auto cast = dyn_cast<CastOp>(def))
    return isRowStatistic(cast.getInput());
  if (!def->hasTrait<OpTrait::Elementwise>())
    return false;
  bool anyTensor = false;
  for (Value operand : def->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    anyTensor = true;
    if (!isRowStatistic(operand))
      return false;
  }
  return anyTensor;
}

namespace {
bool shouldSave(Operation *op, const llvm::DenseSet<Operation *> &recomputed,
                const DifferentiateOptions &options) {
  if (op->getNumResults() != 1 ||
      op->hasAttr(TileDialect::getRecomputeAttrName()))
    return false;
  if (op->hasAttr(TileDialect::getSaveAttrName()))
    return true;
  Value value = op->getResult(0);
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.getElementType().isF32() ||
      options.policy != RecomputePolicy::SaveRowStats ||
      !tile::detail::isRowStatistic(value))
    return false;
  using Cost = tile::detail::RecomputeCost;
  return Cost::recompute(value, recomputed, options.rowWidthHint) >
         Cost::save();
}
} // namespace

double tile::detail::RecomputeCost::recompute(
    Value value, const llvm::DenseSet<Operation *> &recomputed,
    int64_t rowWidthHint) {
  auto widthOf = [&](Value tensor) -> double {
    auto type = dyn_cast<RankedTensorType>(tensor.getType());
    if (!type || type.getRank() == 0)
      return 1.0;
    int64_t width = type.getShape().back();
    return ShapedType::isDynamic(width) ? rowWidthHint : width;
  };
  double cost = 0.0;
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> worklist{value};
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !recomputed.contains(def) || !slice.insert(def))
      continue;
    llvm::append_range(worklist, def->getOperands());
    if (def->getNumResults() != 1 ||
        !isa<RankedTensorType>(def->getResult(0).getType()))
      continue; // scalar and index bookkeeping
    if (auto reduce = dyn_cast<ReduceOp>(def))
      cost += widthOf(reduce.getInput()) + kReductionSync;
    else if (isRowStatistic(def->getResult(0)))
      cost += 1.0;
    else
      cost += widthOf(def->getResult(0));
  }
  return cost;
}

SmallVector<Value>
tile::detail::chooseSavedValues(ArrayRef<Operation *> recomputed,
                                const DifferentiateOptions &options) {
  if (recomputed.empty())
    return {};
  llvm::DenseSet<Operation *> recomputedSet(recomputed.begin(),
                                            recomputed.end());
  // What the derivative rules read, then, walking the recomputation
  // backwards, what that needs in turn. A saved value cuts the walk: what
  // only it needed is no longer recomputed (rstd saved: no mean of x²).
  llvm::DenseSet<Value> needed;
  for (Operation &op : *recomputed.front()->getBlock())
    if (!recomputedSet.contains(&op))
      needed.insert(op.getOperands().begin(), op.getOperands().end());
  SmallVector<Value> saved;
  for (Operation *op : llvm::reverse(recomputed)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value v) { return needed.contains(v); }))
      continue;
    if (shouldSave(op, recomputedSet, options)) {
      saved.push_back(op->getResult(0));
      continue;
    }
    needed.insert(op->getOperands().begin(), op->getOperands().end());
  }
  std::reverse(saved.begin(), saved.end());
  return saved;
}
