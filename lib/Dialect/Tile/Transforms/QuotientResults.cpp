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
  Value undivide(Value value, unsigned depth = 0);

private:
  /// Expressions deeper than this are not followed: a derived backward's
  /// are a few ops deep.
  static constexpr unsigned kMaxDepth = 32;

  AdjointBuilder &builder;
  BroadcastOp divisor;
};

Value Undivider::undivide(Value value, unsigned depth) {
  if (depth > kMaxDepth)
    return {};
  Operation *op = value.getDefiningOp();
  if (!op)
    return {};
  // A rank-2 value divides by the broadcast, a row value by the row value.
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return {};
  Value own = type.getRank() == divisor.getType().getRank()
                  ? divisor.getResult()
                  : divisor.getInput();
  auto next = [&](Value operand) { return undivide(operand, depth + 1); };
  if (auto div = dyn_cast<arith::DivFOp>(op))
    return div.getRhs() == own ? div.getLhs() : Value();
  if (auto neg = dyn_cast<arith::NegFOp>(op)) {
    Value q = next(neg.getOperand());
    return q ? builder.neg(q) : Value();
  }
  if (isa<arith::AddFOp, arith::SubFOp>(op)) {
    Value a = next(op->getOperand(0));
    Value b = a ? next(op->getOperand(1)) : Value();
    if (!b)
      return {};
    return isa<arith::AddFOp>(op) ? builder.add(a, b) : builder.sub(a, b);
  }
  if (auto mul = dyn_cast<arith::MulFOp>(op)) {
    if (Value q = next(mul.getLhs()))
      return builder.mul(q, mul.getRhs());
    if (Value q = next(mul.getRhs()))
      return builder.mul(mul.getLhs(), q);
    return {};
  }
  // broadcast(r / s) along the row = broadcast(r) / broadcast(s).
  if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    if (broadcast.getType() != divisor.getType() ||
        !isLastDimension(broadcast.getDims(), broadcast.getType().getRank()))
      return {};
    // Shaped like the divisor (every rank-2 value of P is: P·e and e / B
    // are elementwise), whose `like` is the forward's, not a value of the
    // sweep's that only this shape would keep alive.
    Value q = next(broadcast.getInput());
    return q ? builder.broadcast(q, broadcast.getDims(), divisor.getShape())
             : Value();
  }
  // Σ_row (t / broadcast(s)) = (Σ_row t) / s.
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    if (reduce.getKind() != ReductionKind::Sum || reduce.getInit() ||
        reduce.getInput().getType() != divisor.getType() ||
        !isLastDimension(reduce.getDims(),
                         reduce.getInput().getType().getRank()))
      return {};
    Value q = next(reduce.getInput());
    return q ? builder.reduceSum(q, reduce.getDims()) : Value();
  }
  return {};
}

} // namespace

void tile::detail::expressThroughQuotients(Block *body, unsigned numPrimals,
                                           ValueRange recomputedResults) {
  for (Value result : recomputedResults) {
    Value quotient = result;
    if (auto cast = result.getDefiningOp<CastOp>())
      quotient = cast.getInput();
    auto div = quotient.getDefiningOp<arith::DivFOp>();
    auto divisor =
        div ? div.getRhs().getDefiningOp<BroadcastOp>() : BroadcastOp();
    if (!divisor || divisor.getType().getRank() != 2 ||
        !isLastDimension(divisor.getDims(), 2))
      continue;
    SmallVector<std::pair<Value, Value>> rewritten; // (product, its rewrite)
    for (OpOperand &use : llvm::make_early_inc_range(div.getLhs().getUses())) {
      auto mul = dyn_cast<arith::MulFOp>(use.getOwner());
      // The rewrite reads the quotient where the product was.
      if (!mul || !div->isBeforeInBlock(mul))
        continue;
      OpBuilder opBuilder(mul);
      AdjointBuilder builder(opBuilder, mul.getLoc());
      Value factor = mul->getOperand(1 - use.getOperandNumber());
      Value q = Undivider(builder, divisor).undivide(factor);
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
