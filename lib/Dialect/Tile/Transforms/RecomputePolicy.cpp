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
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::tile;

namespace {
/// The operands `value`'s row-statistic status depends on, and whether it
/// is one when they all are (std::nullopt: decided without them).
std::optional<bool> rowStatisticBase(Value value,
                                     SmallVectorImpl<Value> &dependsOn) {
  Operation *def = value.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!def || !type)
    return false;
  if (auto reduce = dyn_cast<ReduceOp>(def)) {
    int64_t rank = reduce.getInput().getType().getRank();
    return rank >= 1 && reduce.getDims() == ArrayRef<int64_t>{rank - 1} &&
           !reduce.getInit();
  }
  if (auto splat = dyn_cast<SplatOp>(def)) {
    dependsOn.push_back(splat.getShape());
    return std::nullopt;
  }
  if (auto cast = dyn_cast<CastOp>(def)) {
    dependsOn.push_back(cast.getInput());
    return std::nullopt;
  }
  if (!def->hasTrait<OpTrait::Elementwise>())
    return false;
  for (Value operand : def->getOperands())
    if (isa<RankedTensorType>(operand.getType()))
      dependsOn.push_back(operand);
  if (dependsOn.empty())
    return false;
  return std::nullopt;
}
} // namespace

bool tile::detail::isRowStatistic(Value value, RowStatisticMemo &memo) {
  // Depth-first over the operands with an explicit stack, each value
  // decided once: linear in the kernel however deep or shared its DAG is
  // (a recursive walk overflowed the stack on long chains and took
  // exponential time on `%v = addf %u, %u` ladders).
  SmallVector<std::pair<Value, bool>> stack{{value, false}};
  SmallVector<Value> dependsOn;
  while (!stack.empty()) {
    auto [next, expanded] = stack.pop_back_val();
    if (memo.count(next))
      continue;
    dependsOn.clear();
    std::optional<bool> base = rowStatisticBase(next, dependsOn);
    if (base) {
      memo[next] = *base;
      continue;
    }
    if (expanded) {
      memo[next] = llvm::all_of(
          dependsOn, [&](Value operand) { return memo.lookup(operand); });
      continue;
    }
    stack.push_back({next, true});
    for (Value operand : dependsOn)
      if (!memo.count(operand))
        stack.push_back({operand, false});
  }
  return memo.lookup(value);
}

namespace {
bool shouldSave(Operation *op, const llvm::DenseSet<Operation *> &recomputed,
                const DifferentiateOptions &options,
                tile::detail::RowStatisticMemo &memo) {
  if (op->getNumResults() != 1 ||
      op->hasAttr(TileDialect::getRecomputeAttrName()))
    return false;
  if (op->hasAttr(TileDialect::getSaveAttrName()))
    return true;
  Value value = op->getResult(0);
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.getElementType().isF32() ||
      options.policy != RecomputePolicy::SaveRowStats ||
      !tile::detail::isRowStatistic(value, memo))
    return false;
  using Cost = tile::detail::RecomputeCost;
  return Cost::recompute(value, recomputed, options.rowWidthHint, memo,
                         Cost::save()) > Cost::save();
}
} // namespace

double tile::detail::RecomputeCost::recompute(
    Value value, const llvm::DenseSet<Operation *> &recomputed,
    int64_t rowWidthHint, RowStatisticMemo &memo, double stopAbove) {
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
  // Past `stopAbove` the answer no longer changes: stopping there keeps the
  // policy linear on long per-row chains (each op would otherwise price its
  // whole slice again).
  while (!worklist.empty() && cost <= stopAbove) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !recomputed.contains(def) || !slice.insert(def))
      continue;
    llvm::append_range(worklist, def->getOperands());
    if (def->getNumResults() != 1 ||
        !isa<RankedTensorType>(def->getResult(0).getType()))
      continue; // scalar and index bookkeeping
    if (auto reduce = dyn_cast<ReduceOp>(def))
      cost += widthOf(reduce.getInput()) + kReductionSync;
    else if (isRowStatistic(def->getResult(0), memo))
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
  RowStatisticMemo memo;
  for (Operation *op : llvm::reverse(recomputed)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value v) { return needed.contains(v); }))
      continue;
    if (shouldSave(op, recomputedSet, options, memo)) {
      saved.push_back(op->getResult(0));
      continue;
    }
    needed.insert(op->getOperands().begin(), op->getOperands().end());
  }
  std::reverse(saved.begin(), saved.end());
  return saved;
}

namespace {
/// Bits of one element of `value`'s type.
int64_t elementBits(Value value) {
  return getElementTypeOrSelf(value.getType()).getIntOrFloatBitWidth();
}

/// Whether a use of `value` by a `live` op reads its data.
bool hasLiveDataUse(Value value, const llvm::DenseSet<Operation *> &live) {
  return llvm::any_of(value.getUses(), [&](OpOperand &use) {
    return live.contains(use.getOwner()) && !readsOnlyShape(use);
  });
}

/// Which arguments of `body` the ops that reach its return read the data
/// of, when the uses of `cut` (if given) read it from elsewhere than its
/// definition. A use for a shape alone reads nothing.
llvm::BitVector readArguments(Block *body, Value cut) {
  llvm::DenseSet<Operation *> live;
  llvm::BitVector reads(body->getNumArguments());
  for (Operation &op : llvm::reverse(*body)) {
    bool needed = op.hasTrait<OpTrait::IsTerminator>() ||
                  llvm::any_of(op.getResults(), [&](Value result) {
                    return result != cut && hasLiveDataUse(result, live);
                  });
    if (!needed)
      continue;
    live.insert(&op);
    for (OpOperand &use : op.getOpOperands())
      if (auto arg = dyn_cast<BlockArgument>(use.get());
          arg && arg.getOwner() == body && !readsOnlyShape(use))
        reads.set(arg.getArgNumber());
  }
  return reads;
}
} // namespace

Value tile::detail::valueReadFor(Value result) {
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!type || type.getRank() != 2 || isa<BlockArgument>(result))
    return {};
  // The backward needs the result itself, or the f32 value a cast of it
  // is (a 16-bit result rounds it, and the backward reads it rounded, as
  // PyTorch's softmax backward reads its saved 16-bit output). An f32 to
  // f32 cast counts too: a bf16 kernel specialized for f32 storage makes
  // the same choice as the kernel as written, so that the backward's
  // signature does not depend on the storage dtype (Python binds every
  // specialization by the kernel's own signature).
  if (auto cast = result.getDefiningOp<CastOp>();
      cast && result.use_empty() && elementBits(cast.getInput()) == 32 &&
      elementBits(result) <= 32)
    return cast.getInput();
  return result;
}

std::optional<tile::detail::ForwardResultRead>
tile::detail::nextForwardResult(Block *body, unsigned numPrimals,
                                ValueRange recomputedResults) {
  for (auto [index, result] : llvm::enumerate(recomputedResults)) {
    Value needed = valueReadFor(result);
    if (!needed)
      continue;
    // Only where the backward reads its data: a use for a shape alone,
    // or the cast that makes the result, keeps nothing alive.
    if (llvm::none_of(
            needed.getUses(), [result = Value(result)](OpOperand &use) {
              Operation *user = use.getOwner();
              return !readsOnlyShape(use) &&
                     !(isa<CastOp>(user) && user->getResult(0) == result);
            }))
      continue;
    // Read only where that stops the backward reading a primal tensor
    // input (a residual add's sum instead of both addends; a sigmoid
    // instead of its input, and no exponential); a result that would only
    // add a read is recomputed. Counted in tensors, not bytes: bytes change
    // when the storage dtype is specialized, and the choice must not.
    if (readingFreesAnInput(body, numPrimals, needed))
      return ForwardResultRead{static_cast<unsigned>(index), needed};
  }
  return std::nullopt;
}

bool tile::detail::readingFreesAnInput(Block *body, unsigned numPrimals,
                                       Value value) {
  llvm::BitVector before = readArguments(body, {});
  llvm::BitVector after = readArguments(body, value);
  for (unsigned arg = 0; arg < numPrimals; ++arg) {
    auto argType = dyn_cast<RankedTensorType>(body->getArgument(arg).getType());
    if (before.test(arg) && !after.test(arg) && argType &&
        argType.getRank() == 2)
      return true;
  }
  return false;
}
