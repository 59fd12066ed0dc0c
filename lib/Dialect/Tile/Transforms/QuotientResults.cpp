//===- QuotientResults.cpp - a backward through the quotient it is given -===//
//
// Undividing walks the expression P down to its divisions by the row value
// and builds Q beside it, without touching P (it may have other uses). A
// row sum of t / broadcast(s) is Σ t / s, and a broadcast of r / s along the
// row is broadcast(r) / broadcast(s), so the walk crosses between the row
// value s (rank 1) and its broadcast (rank 2) there.
//
//===----------------------------------------------------------------------===//

#include "QuotientResults.h"
#include "RecomputePolicy.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::tile;

namespace {

/// Whether `dims` of a rank-`rank` tensor is its last dimension alone.
bool isLastDimension(ArrayRef<int64_t> dims, int64_t rank) {
  return dims.size() == 1 && dims.front() == rank - 1;
}

/// Builds, for a value P, the Q with P = Q / divisor.
class Undivider {
public:
  Undivider(AdjointBuilder &builder, BroadcastOp divisor)
      : builder(builder), divisor(divisor) {}

  /// Q for `value`, a rank-2 value (divided by the broadcast) or a rank-1
  /// row value (divided by the row value); null where the rules end.
  /// `shape`, where given, is a value of `value`'s shape that keeps nothing
  /// of the sweep alive (the divisor's `like`): a broadcast rebuilt at the
  /// top level is shaped like it, and one under a row sum like itself (its
  /// width may differ from the divisor's there).
  Value undivide(Value value, Value shape);

private:
  /// At most this many (value, shape) pairs are undivided: a derived
  /// backward's expressions are a few ops deep. A pair is on the walk's
  /// stack at most once, so this bounds the recursion too; once it is
  /// spent every later step fails, so no failure it caused is cached where
  /// a success was possible.
  static constexpr unsigned kMaxValues = 256;

  AdjointBuilder &builder;
  BroadcastOp divisor;
  /// Each (value, shape) undivided once, failures too: a value used twice
  /// (addf %u, %u, ladders of them) is not walked once per path.
  llvm::DenseMap<std::pair<Value, Value>, Value> done;
};

Value Undivider::undivide(Value value, Value shape) {
  auto key = std::make_pair(value, shape);
  if (auto it = done.find(key); it != done.end())
    return it->second;
  if (done.size() >= kMaxValues)
    return {};
  Value q;
  Operation *op = value.getDefiningOp();
  // A rank-2 value divides by the broadcast, a row value by the row value.
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (op && type) {
    Value own = type.getRank() == divisor.getType().getRank()
                    ? divisor.getResult()
                    : divisor.getInput();
    auto next = [&](Value operand, Value operandShape) {
      return undivide(operand, operandShape);
    };
    if (auto div = dyn_cast<arith::DivFOp>(op)) {
      if (div.getRhs() == own)
        q = div.getLhs();
    } else if (auto neg = dyn_cast<arith::NegFOp>(op)) {
      if (Value a = next(neg.getOperand(), shape))
        q = builder.neg(a);
    } else if (isa<arith::AddFOp, arith::SubFOp>(op)) {
      Value a = next(op->getOperand(0), shape);
      Value b = a ? next(op->getOperand(1), shape) : Value();
      if (b)
        q = isa<arith::AddFOp>(op) ? builder.add(a, b) : builder.sub(a, b);
    } else if (auto mul = dyn_cast<arith::MulFOp>(op)) {
      if (Value a = next(mul.getLhs(), shape))
        q = builder.mul(a, mul.getRhs());
      else if (Value b = next(mul.getRhs(), shape))
        q = builder.mul(mul.getLhs(), b);
    } else if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
      // broadcast(r / s) along the row = broadcast(r) / broadcast(s).
      if (broadcast.getType().getRank() == 2 &&
          isLastDimension(broadcast.getDims(), 2))
        if (Value r = next(broadcast.getInput(), Value()))
          q = builder.broadcast(r, broadcast.getDims(),
                                shape ? shape : broadcast.getShape());
    } else if (auto reduce = dyn_cast<ReduceOp>(op)) {
      // Σ_row (t / broadcast(s)) = (Σ_row t) / s, at t's own width.
      if (reduce.getKind() == ReductionKind::Sum && !reduce.getInit() &&
          reduce.getInput().getType().getRank() == 2 &&
          isLastDimension(reduce.getDims(), 2))
        if (Value t = next(reduce.getInput(), Value()))
          q = builder.reduceSum(t, reduce.getDims());
    }
  }
  done[key] = q;
  return q;
}

} // namespace

void tile::detail::expressThroughQuotients(Block *body, unsigned numPrimals,
                                           ArrayRef<Operation *> recomputed,
                                           ValueRange recomputedResults) {
  llvm::DenseSet<Operation *> forwardOps(recomputed.begin(), recomputed.end());
  for (Value result : recomputedResults) {
    // The value the backward would read for the result (nextForwardResult
    // reads the same).
    Value quotient = valueReadFor(result);
    auto div =
        quotient ? quotient.getDefiningOp<arith::DivFOp>() : arith::DivFOp();
    auto divisor =
        div ? div.getRhs().getDefiningOp<BroadcastOp>() : BroadcastOp();
    if (!divisor || divisor.getType().getRank() != 2 ||
        !isLastDimension(divisor.getDims(), 2))
      continue;
    SmallVector<std::pair<Value, Value>> rewritten; // (product, its rewrite)
    for (OpOperand &use : llvm::make_early_inc_range(div.getLhs().getUses())) {
      // Only the sweep's products: the recomputed forward stays as written
      // (a result among its values must stay the result).
      auto mul = dyn_cast<arith::MulFOp>(use.getOwner());
      if (!mul || forwardOps.contains(mul))
        continue;
      OpBuilder opBuilder(mul);
      AdjointBuilder builder(opBuilder, mul.getLoc());
      Value factor = mul->getOperand(1 - use.getOperandNumber());
      // P·e and e / B are elementwise: P, and every rank-2 value it
      // combines elementwise, is shaped like the divisor, whose `like` is
      // the forward's (a kernel argument, as a rule), the form measured on
      // the GPU (docs/Performance.md).
      Value q =
          Undivider(builder, divisor).undivide(factor, divisor.getShape());
      if (!q)
        continue;
      Value product = builder.mul(q, quotient);
      mul.getResult().replaceAllUsesWith(product);
      rewritten.emplace_back(mul.getResult(), product);
    }
    if (rewritten.empty() || readingFreesAnInput(body, numPrimals, quotient))
      continue;
    for (auto [product, rewrite] : rewritten)
      rewrite.replaceAllUsesWith(product);
  }
}
