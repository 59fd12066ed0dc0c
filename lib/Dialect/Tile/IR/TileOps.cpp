//===- TileOps.cpp - tile op verifiers and folders ------------------------===//
//
// Verifier messages name the offending value and say what was expected, so a
// user can fix the kernel from the message alone.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tile;

bool mlir::tile::isStorageFloat(Type type) {
  return type.isBF16() || type.isF16() || type.isF32();
}

namespace {
/// "range [6, 10) is", or "offset X and size Y are" where offset + size
/// would overflow (the fuzzer's UBSan finding): the start of an
/// out-of-bounds message.
std::string describeRange(int64_t offset, int64_t size) {
  int64_t end;
  if (llvm::AddOverflow(offset, size, end))
    return "offset " + std::to_string(offset) + " and size " +
           std::to_string(size) + " are";
  return "range [" + std::to_string(offset) + ", " + std::to_string(end) +
         ") is";
}

/// Formats a shape the way users write it: [?, 4096].
std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      shape, os,
      [&](int64_t size) {
        if (ShapedType::isDynamic(size))
          os << "?";
        else
          os << size;
      },
      ", ");
  os << "]";
  return text;
}

/// Checks that `dims` is strictly increasing and within [0, rank).
LogicalResult verifyDimList(Operation *op, ArrayRef<int64_t> dims, int64_t rank,
                            StringRef what) {
  for (auto [index, dim] : llvm::enumerate(dims)) {
    if (dim < 0 || dim >= rank)
      return op->emitOpError() << what << " dimension " << dim
                               << " is out of bounds for rank " << rank;
    if (index > 0 && dims[index - 1] >= dim)
      return op->emitOpError()
             << what << " dimensions must be strictly increasing, got "
             << formatShape(dims);
  }
  return success();
}

/// The rule of every op with a 'like' operand: the result has its shape.
LogicalResult verifyLikeShape(Operation *op, Value like,
                              RankedTensorType resultType) {
  auto shapeType = cast<RankedTensorType>(like.getType());
  if (shapeType.getShape() == resultType.getShape())
    return success();
  return op->emitOpError("result shape ")
         << formatShape(resultType.getShape())
         << " differs from the shape of the 'like' operand "
         << formatShape(shapeType.getShape());
}

std::optional<int64_t> constantIndex(Value value) {
  APInt constant;
  if (matchPattern(value, m_ConstantInt(&constant)))
    return constant.getSExtValue();
  return std::nullopt;
}
} // namespace

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // bf16/f16 -> f32 -> the same type is exact: f32 represents every value.
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    Type middle = getElementTypeOrSelf(inner.getType());
    if (inner.getInput().getType() == getType() && middle.isF32())
      return inner.getInput();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// IotaOp
//===----------------------------------------------------------------------===//

LogicalResult IotaOp::verify() {
  if (failed(verifyLikeShape(*this, getShape(), getType())))
    return failure();
  if (getType().getRank() == 0)
    return emitOpError("needs a tensor of rank 1 or more: the index is "
                       "along the last dimension");
  return success();
}

//===----------------------------------------------------------------------===//
// SplatOp
//===----------------------------------------------------------------------===//

LogicalResult SplatOp::verify() {
  RankedTensorType resultType = getType();
  if (failed(verifyLikeShape(*this, getShape(), resultType)))
    return failure();
  if (getValue().getType() != resultType.getElementType())
    return emitOpError("value of type ")
           << getValue().getType() << " does not match the result element type "
           << resultType.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType resultType = getType();
  int64_t resultRank = resultType.getRank();
  if (failed(verifyDimList(*this, getDims(), resultRank, "broadcast")))
    return failure();
  if (inputType.getRank() + static_cast<int64_t>(getDims().size()) !=
      resultRank)
    return emitOpError("input of rank ")
           << inputType.getRank() << " plus " << getDims().size()
           << " broadcast dimension(s) does not give the result rank "
           << resultRank;
  if (failed(verifyLikeShape(*this, getShape(), resultType)))
    return failure();
  if (inputType.getElementType() != resultType.getElementType())
    return emitOpError("input element type ")
           << inputType.getElementType()
           << " differs from the result element type "
           << resultType.getElementType();
  // The result dimensions that are not broadcast map, in order, to the input.
  int64_t inputDim = 0;
  for (int64_t dim = 0; dim < resultRank; ++dim) {
    if (llvm::is_contained(getDims(), dim))
      continue;
    int64_t in = inputType.getDimSize(inputDim);
    int64_t out = resultType.getDimSize(dim);
    if (!ShapedType::isDynamic(in) && !ShapedType::isDynamic(out) && in != out)
      return emitOpError("input dimension ")
             << inputDim << " has size " << in << " but result dimension "
             << dim << " has size " << out;
    ++inputDim;
  }
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  if (getDims().empty() && getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

bool ReduceOp::crossesRows(ArrayRef<int64_t> dims, int64_t rank) {
  return llvm::any_of(dims, [&](int64_t dim) { return dim < rank - 1; });
}

void ReduceOp::build(OpBuilder &builder, OperationState &state,
                     ReductionKind kind, Value input, ArrayRef<int64_t> dims,
                     Value init) {
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape;
  for (int64_t dim = 0; dim < inputType.getRank(); ++dim)
    if (!llvm::is_contained(dims, dim))
      shape.push_back(inputType.getDimSize(dim));
  build(builder, state, inputType.clone(shape), kind, input, dims,
        crossesRows(dims, inputType.getRank()), init);
}

LogicalResult ReduceOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType resultType = getType();
  if (failed(verifyDimList(*this, getDims(), inputType.getRank(), "reduction")))
    return failure();
  bool crosses = crossesRows(getDims(), inputType.getRank());
  if (crosses && !getAcrossRows())
    return emitOpError("reduction over dimensions ")
           << formatShape(getDims()) << " of a rank-" << inputType.getRank()
           << " tensor combines rows; spell it `across_rows`";
  if (!crosses && getAcrossRows())
    return emitOpError("is marked `across_rows` but reduces only within a "
                       "row (dimensions ")
           << formatShape(getDims()) << " of a rank-" << inputType.getRank()
           << " tensor)";
  SmallVector<int64_t> expected;
  for (int64_t dim = 0; dim < inputType.getRank(); ++dim)
    if (!llvm::is_contained(getDims(), dim))
      expected.push_back(inputType.getDimSize(dim));
  if (resultType.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape ")
           << formatShape(resultType.getShape())
           << " does not match the input shape without the reduced "
              "dimensions, "
           << formatShape(expected);
  if (inputType.getElementType() != resultType.getElementType())
    return emitOpError("result element type ")
           << resultType.getElementType() << " differs from the input's "
           << inputType.getElementType();
  return success();
}

OpFoldResult ReduceOp::fold(FoldAdaptor) {
  // Reducing over no dimension is the identity for every kind.
  if (getDims().empty() && !getInit() && getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType resultType = getType();
  int64_t rank = inputType.getRank();
  if (rank == 0)
    return emitOpError("cannot slice a rank-0 tensor");
  if (resultType.getRank() != rank)
    return emitOpError("result rank ")
           << resultType.getRank() << " differs from the input rank " << rank;
  if (inputType.getShape().drop_back() != resultType.getShape().drop_back())
    return emitOpError("leading dimensions of the result ")
           << formatShape(resultType.getShape())
           << " must equal those of the input "
           << formatShape(inputType.getShape());
  if (inputType.getElementType() != resultType.getElementType())
    return emitOpError("result element type ")
           << resultType.getElementType() << " differs from the input's "
           << inputType.getElementType();

  std::optional<int64_t> offset = constantIndex(getOffset());
  std::optional<int64_t> size = constantIndex(getSize());
  int64_t inputWidth = inputType.getShape().back();
  int64_t resultWidth = resultType.getShape().back();
  if (offset && *offset < 0)
    return emitOpError("offset ") << *offset << " is negative";
  if (size && *size < 0)
    return emitOpError("size ") << *size << " is negative";
  // Compared as `size > width - offset`: offset + size could wrap.
  if (offset && size && !ShapedType::isDynamic(inputWidth) &&
      (*offset > inputWidth || *size > inputWidth - *offset))
    return emitOpError(describeRange(*offset, *size))
           << " out of bounds for a last dimension of size " << inputWidth;
  if (!ShapedType::isDynamic(resultWidth) && (!size || *size != resultWidth))
    return emitOpError("result last dimension ")
           << resultWidth << " must be dynamic or equal the constant size";
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() != getType())
    return {};
  std::optional<int64_t> offset = constantIndex(getOffset());
  if (!offset || *offset != 0)
    return {};
  // The whole row: either a constant equal to a static width, or the width
  // itself read with tensor.dim.
  int64_t width = getType().getShape().back();
  std::optional<int64_t> size = constantIndex(getSize());
  if (size && !ShapedType::isDynamic(width) && *size == width)
    return getInput();
  if (auto dim = getSize().getDefiningOp<tensor::DimOp>()) {
    std::optional<int64_t> index = dim.getConstantIndex();
    if (dim.getSource() == getInput() && index &&
        *index == getType().getRank() - 1)
      return getInput();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  RankedTensorType resultType = getType();
  int64_t rank = resultType.getRank();
  if (rank == 0)
    return emitOpError("cannot concatenate rank-0 tensors");
  bool allStatic = true;
  int64_t width = 0;
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    auto inputType = cast<RankedTensorType>(input.getType());
    if (inputType.getRank() != rank)
      return emitOpError("input #")
             << index << " has rank " << inputType.getRank()
             << " but the result has rank " << rank;
    if (inputType.getElementType() != resultType.getElementType())
      return emitOpError("input #")
             << index << " has element type " << inputType.getElementType()
             << " but the result has " << resultType.getElementType();
    if (inputType.getShape().drop_back() != resultType.getShape().drop_back())
      return emitOpError("leading dimensions of input #")
             << index << " " << formatShape(inputType.getShape())
             << " must equal those of the result "
             << formatShape(resultType.getShape());
    int64_t inputWidth = inputType.getShape().back();
    if (ShapedType::isDynamic(inputWidth))
      allStatic = false;
    else
      width += inputWidth;
  }
  int64_t resultWidth = resultType.getShape().back();
  if (allStatic && resultWidth != width)
    return emitOpError("result last dimension must be ")
           << width << ", the sum of the inputs' last dimensions";
  if (!allStatic && !ShapedType::isDynamic(resultWidth))
    return emitOpError("result last dimension must be dynamic when an "
                       "input's last dimension is dynamic");
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  return {};
}

//===----------------------------------------------------------------------===//
// PadOp
//===----------------------------------------------------------------------===//

namespace {
/// What tile.pad and tile.repeat share: the result is shaped like the
/// `like` operand, has the input's rank, leading dimensions and element
/// type, and only the last dimension differs.
LogicalResult verifyRowsLike(Operation *op, RankedTensorType inputType,
                             RankedTensorType resultType, Value like,
                             StringRef verb) {
  int64_t rank = inputType.getRank();
  if (rank == 0)
    return op->emitOpError("cannot ") << verb << " a rank-0 tensor";
  if (failed(verifyLikeShape(op, like, resultType)))
    return failure();
  if (resultType.getRank() != rank)
    return op->emitOpError("result rank ")
           << resultType.getRank() << " differs from the input rank " << rank;
  if (inputType.getShape().drop_back() != resultType.getShape().drop_back())
    return op->emitOpError("leading dimensions of the input ")
           << formatShape(inputType.getShape())
           << " must equal those of the result "
           << formatShape(resultType.getShape());
  if (inputType.getElementType() != resultType.getElementType())
    return op->emitOpError("result element type ")
           << resultType.getElementType() << " differs from the input's "
           << inputType.getElementType();
  return success();
}
} // namespace

LogicalResult PadOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType resultType = getType();
  if (failed(verifyRowsLike(*this, inputType, resultType, getShape(), "pad")))
    return failure();
  std::optional<int64_t> offset = constantIndex(getOffset());
  int64_t inputWidth = inputType.getShape().back();
  int64_t resultWidth = resultType.getShape().back();
  if (offset && *offset < 0)
    return emitOpError("offset ") << *offset << " is negative";
  if (offset && !ShapedType::isDynamic(inputWidth) &&
      !ShapedType::isDynamic(resultWidth) &&
      (*offset > resultWidth || inputWidth > resultWidth - *offset))
    return emitOpError(describeRange(*offset, inputWidth))
           << " out of bounds for a last dimension of size " << resultWidth;
  return success();
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  // Padding by nothing: offset 0 and the input already spans the row.
  std::optional<int64_t> offset = constantIndex(getOffset());
  if (!offset || *offset != 0 || getInput().getType() != getType())
    return {};
  int64_t width = getType().getShape().back();
  if (!ShapedType::isDynamic(width))
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// RepeatOp
//===----------------------------------------------------------------------===//

LogicalResult RepeatOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType resultType = getType();
  if (failed(
          verifyRowsLike(*this, inputType, resultType, getShape(), "repeat")))
    return failure();
  int64_t inputWidth = inputType.getShape().back();
  int64_t resultWidth = resultType.getShape().back();
  if (inputWidth == 0)
    return emitOpError("cannot repeat a last dimension of size 0");
  if (!ShapedType::isDynamic(inputWidth) &&
      !ShapedType::isDynamic(resultWidth) && resultWidth % inputWidth != 0)
    return emitOpError("input last dimension ")
           << inputWidth << " does not divide the result's " << resultWidth;
  return success();
}

OpFoldResult RepeatOp::fold(FoldAdaptor) {
  // Repeating to the same width: once.
  if (getInput().getType() == getType() &&
      !ShapedType::isDynamic(getType().getShape().back()))
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// SwapHalvesOp
//===----------------------------------------------------------------------===//

LogicalResult SwapHalvesOp::verify() {
  RankedTensorType type = getType();
  if (type.getRank() == 0)
    return emitOpError("cannot swap within a rank-0 tensor");
  std::optional<int64_t> block = constantIndex(getBlock());
  if (!block)
    return success();
  if (*block <= 0 || *block % 2 != 0)
    return emitOpError("block ") << *block << " must be positive and even";
  int64_t width = type.getShape().back();
  if (!ShapedType::isDynamic(width) && width % *block != 0)
    return emitOpError("block ")
           << *block << " does not divide the last dimension of size " << width;
  return success();
}

//===----------------------------------------------------------------------===//
// ContractOp and ContractRowsOp
//===----------------------------------------------------------------------===//

namespace {
/// Whether two sizes may be equal: equal, or one not known statically.
bool sizesAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// The checks both contractions make of their operands: rank 2, one
/// element type, an f32 result of `expected` shape.
LogicalResult verifyContraction(Operation *op, StringRef first, Value a,
                                StringRef second, Value b,
                                RankedTensorType result,
                                ArrayRef<int64_t> expected) {
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(b.getType());
  if (aType.getRank() != 2)
    return op->emitOpError("the ")
           << first << " must be a rank-2 tensor, got " << aType;
  if (bType.getRank() != 2)
    return op->emitOpError("the ")
           << second << " must be a rank-2 tensor, got " << bType;
  if (aType.getElementType() != bType.getElementType())
    return op->emitOpError("the ")
           << first << " (" << aType.getElementType() << ") and the " << second
           << " (" << bType.getElementType()
           << ") must have one element type: cast one first";
  if (!result.getElementType().isF32())
    return op->emitOpError("the result must be f32 (the accumulator), got ")
           << result.getElementType();
  if (result.getRank() != 2 || !sizesAgree(result.getDimSize(0), expected[0]) ||
      !sizesAgree(result.getDimSize(1), expected[1]))
    return op->emitOpError("result shape ")
           << formatShape(result.getShape()) << " should be "
           << formatShape(expected);
  return success();
}
} // namespace

void ContractOp::build(OpBuilder &builder, OperationState &state, Value input,
                       Value matrix, int64_t over) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto matrixType = cast<RankedTensorType>(matrix.getType());
  auto type = RankedTensorType::get(
      {inputType.getDimSize(0), matrixType.getDimSize(1 - over)},
      builder.getF32Type());
  build(builder, state, type, input, matrix, builder.getI64IntegerAttr(over));
}

LogicalResult ContractOp::verify() {
  int64_t over = getOver();
  if (over != 0 && over != 1)
    return emitOpError("contracts over the matrix's dimension 0 or 1, not ")
           << over;
  RankedTensorType inputType = getInput().getType();
  RankedTensorType matrixType = getMatrix().getType();
  if (inputType.getRank() != 2 || matrixType.getRank() != 2)
    return verifyContraction(*this, "input", getInput(), "matrix", getMatrix(),
                             getType(), {});
  if (!sizesAgree(inputType.getDimSize(1), matrixType.getDimSize(over)))
    return emitOpError("the input's width ")
           << inputType.getDimSize(1) << " differs from the matrix's dimension "
           << over << " (" << matrixType.getDimSize(over) << "), which `over "
           << over << "` contracts it with";
  return verifyContraction(
      *this, "input", getInput(), "matrix", getMatrix(), getType(),
      {inputType.getDimSize(0), matrixType.getDimSize(1 - over)});
}

void ContractRowsOp::build(OpBuilder &builder, OperationState &state,
                           Value left, Value right, Value init) {
  // The accumulator's type where there is one (the op's verifier holds
  // them equal; it may know sizes the operands leave dynamic).
  Type type = init ? init.getType() : Type();
  if (!type) {
    auto leftType = cast<RankedTensorType>(left.getType());
    auto rightType = cast<RankedTensorType>(right.getType());
    type =
        RankedTensorType::get({leftType.getDimSize(1), rightType.getDimSize(1)},
                              builder.getF32Type());
  }
  build(builder, state, type, left, right, init);
}

LogicalResult ContractRowsOp::verify() {
  RankedTensorType leftType = getLeft().getType();
  RankedTensorType rightType = getRight().getType();
  if (leftType.getRank() != 2 || rightType.getRank() != 2)
    return verifyContraction(*this, "left", getLeft(), "right", getRight(),
                             getType(), {});
  if (!sizesAgree(leftType.getDimSize(0), rightType.getDimSize(0)))
    return emitOpError("the left's rows (")
           << leftType.getDimSize(0) << ") differ from the right's ("
           << rightType.getDimSize(0) << ")";
  return verifyContraction(*this, "left", getLeft(), "right", getRight(),
                           getType(),
                           {leftType.getDimSize(1), rightType.getDimSize(1)});
}

#define GET_OP_CLASSES
#include "tile/Dialect/Tile/IR/TileOps.cpp.inc"
