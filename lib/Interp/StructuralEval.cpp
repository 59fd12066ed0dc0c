//===- StructuralEval.cpp - casts, broadcasts, reductions, slices --------===//
//
// The tile ops that move data or change shapes, plus tensor.dim. Reductions
// use compensated (Neumaier) summation so that the reference stays accurate
// to ~1e-16 relative even over rows of tens of thousands of elements.
//
//===----------------------------------------------------------------------===//

#include "EvalInternal.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace t = mlir::tile;

namespace tile::interp {
using namespace detail;

namespace {
Buffer emptyLike(Value value, std::vector<int64_t> shape) {
  return Buffer::tensor(std::move(shape), storageOf(value.getType()));
}

llvm::Error evalCast(t::CastOp op, Env &env) {
  Buffer result = env.get(op.getInput());
  result.storage = storageOf(op.getType());
  if (env.options.roundStorage)
    for (double &value : result.values)
      value = roundTo(result.storage, value);
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

llvm::Error evalIota(t::IotaOp op, Env &env) {
  Buffer result = emptyLike(op, env.get(op.getShape()).shape);
  int64_t width = result.shape.back();
  for (size_t i = 0; i < result.values.size(); ++i)
    result.values[i] = static_cast<double>(static_cast<int64_t>(i) % width);
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

llvm::Error evalSplat(t::SplatOp op, Env &env) {
  const Buffer &shape = env.get(op.getShape());
  Buffer result = emptyLike(op, shape.shape);
  double value = env.get(op.getValue()).values[0];
  if (env.options.roundStorage)
    value = roundTo(result.storage, value);
  std::fill(result.values.begin(), result.values.end(), value);
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

llvm::Error evalBroadcast(t::BroadcastOp op, Env &env) {
  const Buffer &input = env.get(op.getInput());
  Buffer result = emptyLike(op, env.get(op.getShape()).shape);
  ArrayRef<int64_t> dims = op.getDims();
  // Map each kept result dimension to its input stride; broadcast dims get 0.
  std::vector<int64_t> inputStrides = stridesOf(input.shape);
  std::vector<int64_t> strideForResultDim(result.shape.size(), 0);
  for (size_t dim = 0, inputDim = 0; dim < result.shape.size(); ++dim) {
    if (llvm::is_contained(dims, static_cast<int64_t>(dim)))
      continue;
    if (input.shape[inputDim] != result.shape[dim])
      return opError(op, "input dimension " + llvm::Twine(inputDim) +
                             " has size " + llvm::Twine(input.shape[inputDim]) +
                             " but the 'like' operand's dimension " +
                             llvm::Twine(dim) + " has size " +
                             llvm::Twine(result.shape[dim]));
    strideForResultDim[dim] = inputStrides[inputDim++];
  }
  std::vector<int64_t> resultStrides = stridesOf(result.shape);
  for (int64_t index = 0, end = result.numElements(); index < end; ++index) {
    int64_t remainder = index, source = 0;
    for (size_t dim = 0; dim < result.shape.size(); ++dim) {
      source += (remainder / resultStrides[dim]) * strideForResultDim[dim];
      remainder %= resultStrides[dim];
    }
    result.values[index] = input.values[source];
  }
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

llvm::Error evalReduce(t::ReduceOp op, Env &env) {
  const Buffer &input = env.get(op.getInput());
  ArrayRef<int64_t> dims = op.getDims();
  std::vector<int64_t> resultShape;
  int64_t reducedCount = 1;
  for (size_t dim = 0; dim < input.shape.size(); ++dim) {
    if (llvm::is_contained(dims, static_cast<int64_t>(dim)))
      reducedCount *= input.shape[dim];
    else
      resultShape.push_back(input.shape[dim]);
  }
  Buffer result = emptyLike(op, resultShape);
  t::ReductionKind kind = op.getKind();
  double init = 0.0;
  if (kind == t::ReductionKind::Max)
    init = -std::numeric_limits<double>::infinity();
  if (kind == t::ReductionKind::Min)
    init = std::numeric_limits<double>::infinity();
  std::fill(result.values.begin(), result.values.end(), init);
  std::vector<double> compensation(result.values.size(), 0.0);

  std::vector<int64_t> inputStrides = stridesOf(input.shape);
  std::vector<int64_t> resultStrides = stridesOf(resultShape);
  for (int64_t index = 0, end = input.numElements(); index < end; ++index) {
    int64_t remainder = index, target = 0;
    for (size_t dim = 0, resultDim = 0; dim < input.shape.size(); ++dim) {
      int64_t coordinate = remainder / inputStrides[dim];
      remainder %= inputStrides[dim];
      if (!llvm::is_contained(dims, static_cast<int64_t>(dim)))
        target += coordinate * resultStrides[resultDim++];
    }
    double value = input.values[index];
    double &acc = result.values[target];
    switch (kind) {
    case t::ReductionKind::Sum:
    case t::ReductionKind::Mean: {
      // Neumaier's compensated summation.
      double sum = acc + value;
      if (!std::isfinite(sum))
        compensation[target] = 0.0; // inf/NaN: no error term to track
      else if (std::fabs(acc) >= std::fabs(value))
        compensation[target] += (acc - sum) + value;
      else
        compensation[target] += (value - sum) + acc;
      acc = sum;
      break;
    }
    case t::ReductionKind::Max:
      acc = std::isnan(value) || std::isnan(acc) ? NAN : std::max(acc, value);
      break;
    case t::ReductionKind::Min:
      acc = std::isnan(value) || std::isnan(acc) ? NAN : std::min(acc, value);
      break;
    }
  }
  if (kind == t::ReductionKind::Sum || kind == t::ReductionKind::Mean)
    for (size_t i = 0; i < result.values.size(); ++i)
      result.values[i] += compensation[i];
  if (kind == t::ReductionKind::Mean)
    for (double &value : result.values)
      value /= static_cast<double>(reducedCount);
  if (Value initValue = op.getInit()) {
    const Buffer &acc = env.get(initValue);
    if (acc.shape != result.shape)
      return opError(op, "the accumulator's shape differs from the result's");
    for (size_t i = 0; i < result.values.size(); ++i) {
      double &value = result.values[i];
      double a = acc.values[i];
      if (kind == t::ReductionKind::Max)
        value = std::isnan(a) || std::isnan(value) ? NAN : std::max(a, value);
      else if (kind == t::ReductionKind::Min)
        value = std::isnan(a) || std::isnan(value) ? NAN : std::min(a, value);
      else
        value += a;
    }
  }
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

llvm::Error evalSlice(t::SliceOp op, Env &env) {
  const Buffer &input = env.get(op.getInput());
  int64_t offset = asInt(env.get(op.getOffset()).values[0]);
  int64_t size = asInt(env.get(op.getSize()).values[0]);
  int64_t width = input.shape.back();
  // Compared without forming offset + size, which can wrap.
  if (offset < 0 || size < 0 || offset > width || size > width - offset)
    return opError(op, "offset " + llvm::Twine(offset) + " and size " +
                           llvm::Twine(size) +
                           " are out of bounds for a last dimension of size " +
                           llvm::Twine(width));
  std::vector<int64_t> shape = input.shape;
  shape.back() = size;
  Buffer result = emptyLike(op, shape);
  int64_t rows = 1;
  for (size_t dim = 0; dim + 1 < input.shape.size(); ++dim)
    rows *= input.shape[dim];
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t column = 0; column < size; ++column)
      result.values[row * size + column] =
          input.values[row * width + offset + column];
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

bool sameLeadingDims(const Buffer &input, const Buffer &result) {
  return std::equal(input.shape.begin(), input.shape.end() - 1,
                    result.shape.begin());
}

llvm::Error evalPad(t::PadOp op, Env &env) {
  const Buffer &input = env.get(op.getInput());
  int64_t offset = asInt(env.get(op.getOffset()).values[0]);
  Buffer result = emptyLike(op, env.get(op.getShape()).shape);
  int64_t size = input.shape.back(), width = result.shape.back();
  if (!sameLeadingDims(input, result))
    return opError(op, "the input's leading dimensions differ from those of "
                       "the 'like' operand");
  if (offset < 0 || offset > width || size > width - offset)
    return opError(op, "range [" + llvm::Twine(offset) + ", " +
                           llvm::Twine(offset + size) +
                           ") is out of bounds for a last dimension of size " +
                           llvm::Twine(width));
  int64_t rows = width == 0 ? 0 : result.numElements() / width;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t column = 0; column < size; ++column)
      result.values[row * width + offset + column] =
          input.values[row * size + column];
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

llvm::Error evalConcat(t::ConcatOp op, Env &env) {
  std::vector<const Buffer *> inputs;
  std::vector<int64_t> shape = env.get(op.getInputs().front()).shape;
  int64_t width = 0;
  for (Value value : op.getInputs()) {
    const Buffer &input = env.get(value);
    std::vector<int64_t> leading(input.shape.begin(), input.shape.end() - 1);
    if (!std::equal(leading.begin(), leading.end(), shape.begin()))
      return opError(op, "inputs have different leading dimensions");
    width += input.shape.back();
    inputs.push_back(&input);
  }
  shape.back() = width;
  Buffer result = emptyLike(op, shape);
  int64_t rows = 1;
  for (size_t dim = 0; dim + 1 < shape.size(); ++dim)
    rows *= shape[dim];
  for (int64_t row = 0; row < rows; ++row) {
    int64_t column = 0;
    for (const Buffer *input : inputs) {
      int64_t inputWidth = input->shape.back();
      for (int64_t i = 0; i < inputWidth; ++i)
        result.values[row * width + column + i] =
            input->values[row * inputWidth + i];
      column += inputWidth;
    }
  }
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

llvm::Error evalRepeat(t::RepeatOp op, Env &env) {
  const Buffer &input = env.get(op.getInput());
  Buffer result = emptyLike(op, env.get(op.getShape()).shape);
  int64_t size = input.shape.back(), width = result.shape.back();
  if (!sameLeadingDims(input, result))
    return opError(op, "the input's leading dimensions differ from those of "
                       "the 'like' operand");
  if (size <= 0 || width % size != 0)
    return opError(op, "input last dimension " + llvm::Twine(size) +
                           " does not divide the result's " +
                           llvm::Twine(width));
  int64_t rows = width == 0 ? 0 : result.numElements() / width;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t column = 0; column < width; ++column)
      result.values[row * width + column] =
          input.values[row * size + column % size];
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

llvm::Error evalSwapHalves(t::SwapHalvesOp op, Env &env) {
  const Buffer &input = env.get(op.getInput());
  int64_t block = asInt(env.get(op.getBlock()).values[0]);
  int64_t width = input.shape.back();
  if (block <= 0 || block % 2 != 0 || width % block != 0)
    return opError(op, "block " + llvm::Twine(block) +
                           " must be positive, even and divide the last "
                           "dimension of size " +
                           llvm::Twine(width));
  Buffer result = emptyLike(op, input.shape);
  int64_t half = block / 2;
  int64_t rows = width == 0 ? 0 : input.numElements() / width;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t column = 0; column < width; ++column) {
      int64_t partner = column % block < half ? column + half : column - half;
      result.values[row * width + column] = input.values[row * width + partner];
    }
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

llvm::Error evalDim(tensor::DimOp op, Env &env) {
  const Buffer &source = env.get(op.getSource());
  int64_t dim = asInt(env.get(op.getIndex()).values[0]);
  if (dim < 0 || dim >= static_cast<int64_t>(source.shape.size()))
    return opError(op, "dimension " + llvm::Twine(dim) +
                           " is out of bounds for rank " +
                           llvm::Twine(source.shape.size()));
  env.values[op] = Buffer::scalar(static_cast<double>(source.shape[dim]));
  return llvm::Error::success();
}
} // namespace

std::optional<llvm::Error> detail::evalStructural(Operation *op, Env &env) {
  return llvm::TypeSwitch<Operation *, std::optional<llvm::Error>>(op)
      .Case([&](t::CastOp cast) { return evalCast(cast, env); })
      .Case([&](t::SplatOp splat) { return evalSplat(splat, env); })
      .Case([&](t::IotaOp iota) { return evalIota(iota, env); })
      .Case([&](t::BroadcastOp b) { return evalBroadcast(b, env); })
      .Case([&](t::ReduceOp reduce) { return evalReduce(reduce, env); })
      .Case([&](t::SliceOp slice) { return evalSlice(slice, env); })
      .Case([&](t::ConcatOp concat) { return evalConcat(concat, env); })
      .Case([&](t::PadOp pad) { return evalPad(pad, env); })
      .Case([&](t::RepeatOp repeat) { return evalRepeat(repeat, env); })
      .Case([&](t::SwapHalvesOp swap) { return evalSwapHalves(swap, env); })
      .Case([&](tensor::DimOp dim) { return evalDim(dim, env); })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace tile::interp
