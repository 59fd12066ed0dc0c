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
// Shapes: a `like` operand or a `tensor.dim` only needs a tensor of the
// right shape, so both are moved to the earliest value with that shape (the
// "shape root", usually a kernel argument). Otherwise a derived backward
// keeps recomputing x·x just to know how wide x·x is.
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
/// The earliest value known to have the shape of `value`: through
/// elementwise ops, casts, and the `like` operand of ops shaped by one.
Value getShapeRoot(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    Value next;
    if (auto splat = dyn_cast<SplatOp>(def))
      next = splat.getShape();
    else if (auto broadcast = dyn_cast<BroadcastOp>(def))
      next = broadcast.getShape();
    else if (auto pad = dyn_cast<PadOp>(def))
      next = pad.getShape();
    else if (isa<CastOp>(def) || def->hasTrait<OpTrait::Elementwise>())
      for (Value operand : def->getOperands())
        if (isa<RankedTensorType>(operand.getType())) {
          next = operand;
          break;
        }
    if (!next)
      break;
    value = next;
  }
  return value;
}

/// Points the `like` operand of a splat, broadcast, pad or repeat at its
/// shape root.
template <typename OpTy> struct LikeShapeRoot final : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value root = getShapeRoot(op.getShape());
    if (root == op.getShape())
      return rewriter.notifyMatchFailure(op, "already the shape root");
    rewriter.modifyOpInPlace(op, [&] { op.getShapeMutable().assign(root); });
    return success();
  }
};

/// tensor.dim of a value reads the same size from its shape root.
struct DimOfShapeRoot final : OpRewritePattern<tensor::DimOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::DimOp op,
                                PatternRewriter &rewriter) const override {
    Value root = getShapeRoot(op.getSource());
    if (root == op.getSource())
      return rewriter.notifyMatchFailure(op, "already the shape root");
    rewriter.modifyOpInPlace(op, [&] { op.getSourceMutable().assign(root); });
    return success();
  }
};
/// The size of the last dimension of `value` as an SSA value or constant,
/// when it is known: static, or the size operand of a slice that has the
/// same shape (found through elementwise ops and casts, whose tensor
/// operands all share their result's shape).
std::optional<OpFoldResult> getLastDimSize(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!ShapedType::isDynamic(type.getShape().back()))
    return OpFoldResult(IntegerAttr::get(IndexType::get(value.getContext()),
                                         type.getShape().back()));
  SmallVector<Value> worklist{value};
  llvm::SmallPtrSet<Operation *, 16> visited;
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !visited.insert(def).second)
      continue;
    if (auto slice = dyn_cast<SliceOp>(def))
      return OpFoldResult(slice.getSize());
    if (!isa<CastOp>(def) && !def->hasTrait<OpTrait::Elementwise>())
      continue;
    for (Value operand : def->getOperands())
      if (isa<RankedTensorType>(operand.getType()))
        worklist.push_back(operand);
  }
  return std::nullopt;
}

bool isConstantIndex(Value value, int64_t expected) {
  APInt constant;
  return matchPattern(value, m_ConstantInt(&constant)) &&
         constant.getSExtValue() == expected;
}

/// pad(p, 0) + pad(q, width(p)) → pad(concat(p, q), 0): two row pieces
/// that meet become one. This is how the gradients of the two halves of a
/// [M, 2H] input (silu_and_mul) end up written side by side; the outer pad
/// remains for the column an odd width leaves over, and folds away when
/// the widths are known to match.
struct AddOfAdjacentPads final : OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::AddFOp op,
                                PatternRewriter &rewriter) const override {
    auto first = op.getLhs().getDefiningOp<PadOp>();
    auto second = op.getRhs().getDefiningOp<PadOp>();
    if (!first || !second || !first->hasOneUse() || !second->hasOneUse())
      return rewriter.notifyMatchFailure(op, "not an add of two pads");
    if (!isConstantIndex(first.getOffset(), 0))
      std::swap(first, second);
    if (!isConstantIndex(first.getOffset(), 0) ||
        first.getShape() != second.getShape() ||
        first.getInput().getType().getElementType() !=
            second.getInput().getType().getElementType())
      return rewriter.notifyMatchFailure(op, "no pad at offset 0");
    std::optional<OpFoldResult> width = getLastDimSize(first.getInput());
    bool adjacent = false;
    if (width && isa<Value>(*width))
      adjacent = cast<Value>(*width) == second.getOffset();
    else if (width)
      adjacent =
          isConstantIndex(second.getOffset(),
                          cast<IntegerAttr>(cast<Attribute>(*width)).getInt());
    if (!adjacent)
      return rewriter.notifyMatchFailure(op, "the pieces do not meet");
    auto pieceType = first.getInput().getType();
    SmallVector<int64_t> shape(pieceType.getShape());
    int64_t a = pieceType.getShape().back();
    int64_t b = second.getInput().getType().getShape().back();
    shape.back() = ShapedType::isDynamic(a) || ShapedType::isDynamic(b)
                       ? ShapedType::kDynamic
                       : a + b;
    Value joined =
        ConcatOp::create(rewriter, op.getLoc(), pieceType.clone(shape),
                         ValueRange{first.getInput(), second.getInput()});
    rewriter.replaceOpWithNewOp<PadOp>(op, op.getType(), joined,
                                       first.getOffset(), first.getShape());
    return success();
  }
};
} // namespace

void TileDialect::getCanonicalizationPatterns(
    RewritePatternSet &results) const {
  MLIRContext *context = results.getContext();
  results.add<SplatConstantToDense, BroadcastOfSplat, DimOfShapeRoot,
              LikeShapeRoot<SplatOp>, LikeShapeRoot<BroadcastOp>,
              LikeShapeRoot<PadOp>, LikeShapeRoot<RepeatOp>, AddOfAdjacentPads>(
      context);
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
