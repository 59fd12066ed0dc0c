//===- TileCanonicalize.cpp - dialect-wide canonicalization patterns -----===//
//
// Patterns the canonicalizer picks up from the tile dialect. Some rewrite
// upstream arith ops: a constant that reaches a dynamically shaped tensor
// through `tile.splat`/`tile.broadcast` is invisible to arith's own folders,
// so x·1, x/1, x+0 and x−0 are folded here.
//
// Signed zeros: tile kernels treat +0 and −0 as equal (as with fast-math
// `nsz`), so x + 0 → x is applied for either sign of zero.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::tile;

namespace {
/// The value every element of `value` takes, when it is a known constant:
/// a scalar constant, a dense splat, or a splat/broadcast of either.
std::optional<double> getUniformConstant(Value value) {
  if (auto splat = value.getDefiningOp<SplatOp>())
    return getUniformConstant(splat.getValue());
  if (auto broadcast = value.getDefiningOp<BroadcastOp>())
    return getUniformConstant(broadcast.getInput());
  FloatAttr scalar;
  if (matchPattern(value, m_Constant(&scalar)))
    return scalar.getValueAsDouble();
  SplatElementsAttr dense;
  if (matchPattern(value, m_Constant(&dense)) &&
      isa<FloatType>(dense.getElementType()))
    return dense.getSplatValue<APFloat>().convertToDouble();
  return std::nullopt;
}

bool isUniform(Value value, double expected) {
  std::optional<double> constant = getUniformConstant(value);
  return constant && *constant == expected;
}

/// x op identity → x (and identity op x → x when `commutative`).
template <typename OpTy>
struct FoldArithIdentity final : OpRewritePattern<OpTy> {
  FoldArithIdentity(MLIRContext *context, double identity, bool commutative)
      : OpRewritePattern<OpTy>(context), identity(identity),
        commutative(commutative) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value lhs = op.getLhs(), rhs = op.getRhs();
    if (isUniform(rhs, identity) && lhs.getType() == op.getType()) {
      rewriter.replaceOp(op, lhs);
      return success();
    }
    if (commutative && isUniform(lhs, identity) &&
        rhs.getType() == op.getType()) {
      rewriter.replaceOp(op, rhs);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no identity operand");
  }

  double identity;
  bool commutative;
};

/// tile.splat of a constant into a static shape is a dense constant, which
/// upstream folders understand.
struct SplatConstantToDense final : OpRewritePattern<SplatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplatOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    FloatAttr scalar;
    if (!matchPattern(op.getValue(), m_Constant(&scalar)))
      return rewriter.notifyMatchFailure(op, "value is not a constant");
    auto dense = DenseElementsAttr::get(op.getType(), scalar.getValue());
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, dense);
    return success();
  }
};

/// Broadcasting a uniform fill is a fill of the larger shape.
struct BroadcastOfSplat final : OpRewritePattern<BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastOp op,
                                PatternRewriter &rewriter) const override {
    auto splat = op.getInput().getDefiningOp<SplatOp>();
    if (!splat)
      return rewriter.notifyMatchFailure(op, "input is not a tile.splat");
    rewriter.replaceOpWithNewOp<SplatOp>(op, op.getType(), splat.getValue(),
                                         op.getShape());
    return success();
  }
};
} // namespace

void TileDialect::getCanonicalizationPatterns(
    RewritePatternSet &results) const {
  MLIRContext *context = results.getContext();
  results.add<SplatConstantToDense, BroadcastOfSplat>(context);
  // 0.0 == -0.0, so x + 0 and x - 0 fold for either sign of zero.
  results.add<FoldArithIdentity<arith::AddFOp>>(context, 0.0,
                                                /*commutative=*/true);
  results.add<FoldArithIdentity<arith::SubFOp>>(context, 0.0,
                                                /*commutative=*/false);
  results.add<FoldArithIdentity<arith::MulFOp>>(context, 1.0,
                                                /*commutative=*/true);
  results.add<FoldArithIdentity<arith::DivFOp>>(context, 1.0,
                                                /*commutative=*/false);
}
