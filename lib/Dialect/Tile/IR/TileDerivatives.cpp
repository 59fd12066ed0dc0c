//===- TileDerivatives.cpp - reverse-mode rules of the tile ops ----------===//
//
// The data-movement ops have data-movement adjoints: broadcast ↔ sum,
// reduce ↔ broadcast, slice ↔ pad, concat ↔ slices, and a cast's cotangent
// is the f32 cotangent itself (cotangents live in f32; the differentiator
// converts to a storage type only at the function boundary). `like` and index
// operands contribute only shapes and positions, never a cotangent.
//
// A contraction is bilinear: each operand's cotangent is the other
// contracted with the result's, and a matrix's sums over the rows.
//
// The row-shift rules (RowShift.h) follow: data movement within a row keeps
// a row's change, a row reduction keeps the forms its kind keeps, padding
// with zeros keeps a factor only, and anything that mixes rows is opaque to
// it.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/TileOps.h"

using namespace mlir;
using namespace mlir::tile;

namespace {
/// Pads `cotangents` with nulls up to one entry per operand.
void noCotangents(Operation *op, SmallVectorImpl<Value> &cotangents) {
  cotangents.resize(op->getNumOperands(), Value());
}

/// Whether `dims` of a rank-`rank` tensor is its last dimension alone, and
/// that a dimension within rows: the one a row statistic reduces and a row
/// value is broadcast along. In a rank-1 tensor it is the row dimension.
bool isRowDimension(ArrayRef<int64_t> dims, int64_t rank) {
  return rank >= 2 && dims.size() == 1 && dims.front() == rank - 1;
}

/// The change of a value moved within each row of `input` (a slice, a
/// repeat, a permutation of the last dimension): kept in a rank-2 or
/// higher tensor; in a rank-1 one the last dimension is the rows', and rows
/// would mix.
RowShift movedWithinRows(Value input, RowShift change) {
  return cast<RankedTensorType>(input.getType()).getRank() >= 2
             ? change
             : RowShift::opaque(change);
}
} // namespace

LogicalResult CastOp::buildAdjoint(AdjointBuilder &, ValueRange results,
                                   SmallVectorImpl<Value> &operands) {
  // Integers (labels) are data, never differentiated.
  if (!isa<FloatType>(getElementTypeOrSelf(getInput())))
    noCotangents(*this, operands);
  else
    operands.push_back(results[0]);
  return success();
}

LogicalResult StopGradientOp::buildAdjoint(AdjointBuilder &, ValueRange,
                                           SmallVectorImpl<Value> &operands) {
  noCotangents(*this, operands);
  return success();
}

LogicalResult IotaOp::buildAdjoint(AdjointBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &operands) {
  // The index does not depend on the 'like' operand's values.
  noCotangents(*this, operands);
  return success();
}

LogicalResult SplatOp::buildAdjoint(AdjointBuilder &, ValueRange,
                                    SmallVectorImpl<Value> &operands) {
  // The value is a scalar parameter; tile-differentiate rejects
  // differentiable scalar arguments, so no scalar ever carries a cotangent.
  noCotangents(*this, operands);
  return success();
}

LogicalResult BroadcastOp::buildAdjoint(AdjointBuilder &builder,
                                        ValueRange results,
                                        SmallVectorImpl<Value> &operands) {
  operands.push_back(builder.reduceSum(results[0], getDims()));
  noCotangents(*this, operands);
  return success();
}

LogicalResult ReduceOp::buildAdjoint(AdjointBuilder &builder,
                                     ValueRange results,
                                     SmallVectorImpl<Value> &operands) {
  Value g = results[0];
  Value input = getInput();
  Value initCotangent;
  switch (getKind()) {
  case ReductionKind::Sum:
    operands.push_back(builder.broadcast(g, getDims(), input));
    initCotangent = g;
    break;
  case ReductionKind::Mean: {
    // Divide the (smaller) reduced cotangent before broadcasting it.
    Value count = builder.splat(builder.elementCount(input, getDims()), g);
    operands.push_back(
        builder.broadcast(builder.div(g, count), getDims(), input));
    initCotangent = g;
    break;
  }
  case ReductionKind::Max:
  case ReductionKind::Min: {
    // The elements equal to the result share the cotangent evenly, as
    // PyTorch's amax/amin and JAX's max do: each of k tied elements gets
    // g / k, so the gradient stays a subgradient. Ties are common in 16-bit
    // data (a row of a thousand bf16 values often repeats its maximum);
    // giving each the whole g made their gradient k times too large. Over
    // a row the count is one more row sum, which shares the exchange of
    // whatever else reads the result. Across rows it is a cross-row sum the
    // elements of every row need: the evaluator computes it, the GPU
    // lowering refuses it (as it refuses the backward's use of the cross-row
    // extreme itself), rather than give each tied element the whole g.
    Value reached = builder.broadcast(getResult(), getDims(), input);
    Value isExtreme = builder.cmp(arith::CmpFPredicate::OEQ, input, reached);
    Value ties = builder.reduceSum(
        builder.where(isExtreme, builder.constantLike(1.0, input)), getDims());
    Value initTies;
    if (Value init = getInit()) {
      initTies = builder.cmp(arith::CmpFPredicate::OEQ, init, getResult());
      ties = builder.add(ties,
                         builder.where(initTies, builder.constantLike(1.0, g)));
    }
    Value share = builder.div(g, ties);
    operands.push_back(
        builder.where(isExtreme, builder.broadcast(share, getDims(), input)));
    if (initTies)
      initCotangent = builder.where(initTies, share);
    break;
  }
  }
  if (getInit())
    operands.push_back(initCotangent);
  return success();
}

LogicalResult SliceOp::buildAdjoint(AdjointBuilder &builder, ValueRange results,
                                    SmallVectorImpl<Value> &operands) {
  Value input = getInput();
  operands.push_back(
      PadOp::create(builder.getBuilder(), builder.getLoc(),
                    AdjointBuilder::cotangentType(input.getType()), results[0],
                    getOffset(), input));
  noCotangents(*this, operands);
  return success();
}

LogicalResult PadOp::buildAdjoint(AdjointBuilder &builder, ValueRange results,
                                  SmallVectorImpl<Value> &operands) {
  Value input = getInput();
  int64_t last = getInput().getType().getRank() - 1;
  operands.push_back(
      SliceOp::create(builder.getBuilder(), builder.getLoc(),
                      AdjointBuilder::cotangentType(input.getType()),
                      results[0], getOffset(), builder.dimSize(input, last)));
  noCotangents(*this, operands);
  return success();
}

LogicalResult ConcatOp::buildAdjoint(AdjointBuilder &builder,
                                     ValueRange results,
                                     SmallVectorImpl<Value> &operands) {
  int64_t last = getType().getRank() - 1;
  Value offset;
  for (Value input : getInputs()) {
    if (!offset)
      offset = arith::ConstantIndexOp::create(builder.getBuilder(),
                                              builder.getLoc(), 0);
    Value width = builder.dimSize(input, last);
    operands.push_back(
        SliceOp::create(builder.getBuilder(), builder.getLoc(),
                        AdjointBuilder::cotangentType(input.getType()),
                        results[0], offset, width));
    offset = builder.indexAdd(offset, width);
  }
  return success();
}

LogicalResult RepeatOp::buildAdjoint(AdjointBuilder &builder,
                                     ValueRange results,
                                     SmallVectorImpl<Value> &operands) {
  // The adjoint would sum the repeats of each column, which no op says yet;
  // a gradient that needs it is refused rather than dropped.
  if (builder.needsCotangent(getInput()))
    return emitOpError("has no derivative with respect to its repeated "
                       "input; mark the arguments it comes from tile.nograd");
  noCotangents(*this, operands);
  return success();
}

LogicalResult SwapHalvesOp::buildAdjoint(AdjointBuilder &builder,
                                         ValueRange results,
                                         SmallVectorImpl<Value> &operands) {
  // A permutation that is its own inverse is its own transpose.
  operands.push_back(SwapHalvesOp::create(
      builder.getBuilder(), builder.getLoc(), results[0], getBlock()));
  noCotangents(*this, operands);
  return success();
}

LogicalResult SigmoidOp::buildAdjoint(AdjointBuilder &builder,
                                      ValueRange results,
                                      SmallVectorImpl<Value> &operands) {
  // σ' = σ·(1 − σ), from the recomputed result.
  Value s = getResult();
  Value one = builder.constantLike(1.0, s);
  operands.push_back(
      builder.mul(results[0], builder.mul(s, builder.sub(one, s))));
  return success();
}

//===----------------------------------------------------------------------===//
// Row-shift rules
//===----------------------------------------------------------------------===//

namespace {
/// The element type both operands of a contraction share.
Type operandElementType(Value operand) {
  return cast<RankedTensorType>(operand.getType()).getElementType();
}
} // namespace

LogicalResult ContractOp::buildAdjoint(AdjointBuilder &builder,
                                       ValueRange results,
                                       SmallVectorImpl<Value> &operands) {
  // The backward's GEMMs read the cotangent in the operands' type (the
  // tensor cores' inputs), as PyTorch's Linear backward does: rounded once
  // here, visibly.
  Value g = builder.castTo(results[0], operandElementType(getInput()));
  Value input = getInput(), matrix = getMatrix();
  if (getOver() == 1) {
    // y = x·Wᵀ: dx = g·W, dW = gᵀ·x.
    operands.push_back(builder.contract(g, matrix, 0, input));
    operands.push_back(builder.contractRows(g, input, matrix));
  } else {
    // y = x·W: dx = g·Wᵀ, dW = xᵀ·g.
    operands.push_back(builder.contract(g, matrix, 1, input));
    operands.push_back(builder.contractRows(input, g, matrix));
  }
  return success();
}

LogicalResult ContractRowsOp::buildAdjoint(AdjointBuilder &builder,
                                           ValueRange results,
                                           SmallVectorImpl<Value> &operands) {
  // R = Lᵀ·R' (+ acc), G [p, q]: dL = R'·Gᵀ, dR' = L·G, d acc = G.
  Value g = builder.castTo(results[0], operandElementType(getLeft()));
  operands.push_back(builder.contract(getRight(), g, 1, getLeft()));
  operands.push_back(builder.contract(getLeft(), g, 0, getRight()));
  if (getInit())
    operands.push_back(results[0]);
  return success();
}

RowShift CastOp::propagateRowShift(ArrayRef<RowShift> operands) {
  return operands[0];
}

RowShift StopGradientOp::propagateRowShift(ArrayRef<RowShift>) {
  return RowShift::none();
}

RowShift IotaOp::propagateRowShift(ArrayRef<RowShift>) {
  return RowShift::none();
}

RowShift SplatOp::propagateRowShift(ArrayRef<RowShift> operands) {
  // A scalar is no row's; the `like` operand gives the shape only.
  return RowShift::opaque(operands[0]);
}

RowShift BroadcastOp::propagateRowShift(ArrayRef<RowShift> operands) {
  // A row value along its row: every element moves with its row. Along
  // another dimension the rows would mix.
  if (isRowDimension(getDims(), getType().getRank()))
    return operands[0];
  return RowShift::opaque(operands[0]);
}

RowShift ReduceOp::propagateRowShift(ArrayRef<RowShift> operands) {
  RowShift input = operands[0];
  if (getInit() || !isRowDimension(getDims(), getInput().getType().getRank()))
    return RowShift::opaque(operands);
  switch (getKind()) {
  case ReductionKind::Sum:
    // Σ (a·k) = k·Σ a; Σ (a + c·δ) moves by N·c·δ, not a form.
    return input.getKind() == RowShift::Kind::Offset ? RowShift::unknown()
                                                     : input;
  case ReductionKind::Mean:
  case ReductionKind::Max:
  case ReductionKind::Min:
    // A shift or a positive scale (exp(c·δ) > 0) of every element of a row
    // moves its mean, max and min alike.
    return input;
  }
  llvm_unreachable("every reduction kind is handled");
}

RowShift SliceOp::propagateRowShift(ArrayRef<RowShift> operands) {
  return movedWithinRows(getInput(), operands[0]);
}

RowShift PadOp::propagateRowShift(ArrayRef<RowShift> operands) {
  // The zeros it adds stay zero under a scale, not under a shift.
  RowShift input = operands[0];
  if (input.getKind() == RowShift::Kind::Offset)
    return RowShift::unknown();
  return movedWithinRows(getInput(), input);
}

RowShift ConcatOp::propagateRowShift(ArrayRef<RowShift> operands) {
  return movedWithinRows(getResult(), RowShift::same(operands));
}

RowShift RepeatOp::propagateRowShift(ArrayRef<RowShift> operands) {
  return movedWithinRows(getInput(), operands[0]);
}

RowShift SwapHalvesOp::propagateRowShift(ArrayRef<RowShift> operands) {
  return movedWithinRows(getInput(), operands[0]);
}

RowShift SigmoidOp::propagateRowShift(ArrayRef<RowShift> operands) {
  return RowShift::opaque(operands);
}

RowShift ContractOp::propagateRowShift(ArrayRef<RowShift> operands) {
  // A linear map of each row: a scale of the row (the matrix unchanged)
  // scales its result; a shift becomes one by the matrix's row sums, no
  // form.
  RowShift input = operands[0];
  if (operands[1].getKind() == RowShift::Kind::None &&
      input.getKind() != RowShift::Kind::Offset)
    return input;
  return RowShift::opaque(operands);
}

RowShift ContractRowsOp::propagateRowShift(ArrayRef<RowShift> operands) {
  // It mixes the rows.
  return RowShift::opaque(operands);
}
