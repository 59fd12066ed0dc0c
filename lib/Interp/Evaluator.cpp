//===- Evaluator.cpp - float64 reference evaluator driver ----------------===//
//
// Walks the function's single block in order, keeping one host Buffer per SSA
// value. Op families are evaluated in ElementwiseEval.cpp and
// StructuralEval.cpp; this file binds arguments and collects results.
//
//===----------------------------------------------------------------------===//

#include "EvalInternal.h"

#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace tile::interp {
using namespace detail;

Buffer Buffer::tensor(std::vector<int64_t> shape, StorageType storage,
                      std::vector<double> values) {
  Buffer buffer;
  buffer.shape = std::move(shape);
  buffer.storage = storage;
  buffer.isTensor = true;
  buffer.values = std::move(values);
  if (buffer.values.empty())
    buffer.values.assign(buffer.numElements(), 0.0);
  return buffer;
}

Buffer Buffer::scalar(double value, StorageType storage) {
  Buffer buffer;
  buffer.isTensor = false;
  buffer.storage = storage;
  buffer.values = {value};
  return buffer;
}

int64_t Buffer::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

std::optional<StorageType> getStorageType(Type elementType) {
  if (elementType.isBF16())
    return StorageType::BF16;
  if (elementType.isF16())
    return StorageType::F16;
  if (elementType.isF32())
    return StorageType::F32;
  if (elementType.isF64())
    return StorageType::F64;
  return std::nullopt;
}

StorageType detail::storageOf(Type type) {
  return getStorageType(getElementTypeOrSelf(type)).value_or(StorageType::F64);
}

std::vector<int64_t> detail::stridesOf(ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t dim = static_cast<int64_t>(shape.size()) - 2; dim >= 0; --dim)
    strides[dim] = strides[dim + 1] * shape[dim + 1];
  return strides;
}

llvm::Error errorAt(Location loc, const llvm::Twine &message) {
  // `file:line:col: error: ...` like every other diagnostic of the tools,
  // from the first file location `loc` holds.
  std::string text;
  llvm::raw_string_ostream os(text);
  FileLineColLoc where;
  loc->walk([&](Location inner) {
    if (auto fileLoc = dyn_cast<FileLineColLoc>(inner)) {
      where = fileLoc;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (where)
    os << where.getFilename().getValue() << ":" << where.getLine() << ":"
       << where.getColumn() << ": ";
  os << "error: " << message;
  return llvm::createStringError(llvm::inconvertibleErrorCode(), text);
}

std::optional<int64_t> boundedElements(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0 || (size != 0 && count > kMaxElements / size))
      return std::nullopt;
    count *= size;
  }
  return count;
}

llvm::Error detail::opError(Operation *op, const llvm::Twine &message) {
  return errorAt(op->getLoc(),
                 "'" + op->getName().getStringRef() + "': " + message);
}

namespace {
std::string typeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}
} // namespace

llvm::Error detail::checkResultSizes(Operation *op, Env &env) {
  // Static shapes are checked as written; a concatenation's size is the sum
  // of its inputs', a contraction's the product of two of their sizes. Every
  // other result is as large as an operand at most.
  for (Value result : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type)
      continue;
    // The dimensions known before run time, up to the first dynamic one.
    ArrayRef<int64_t> known = type.getShape().take_while(
        [](int64_t size) { return !ShapedType::isDynamic(size); });
    if (!boundedElements(known))
      return opError(op, "its result type " + llvm::Twine(typeName(type)) +
                             " exceeds the evaluator's limit of " +
                             llvm::Twine(kMaxElements) + " elements");
  }
  if (std::optional<int64_t> elements = contractionResultElements(op, env);
      elements && *elements > kMaxElements)
    return opError(op, "its result exceeds the evaluator's limit of " +
                           llvm::Twine(kMaxElements) + " elements");
  if (auto concat = dyn_cast<mlir::tile::ConcatOp>(op)) {
    int64_t total = 0;
    for (Value input : concat.getInputs()) {
      total += env.get(input).numElements();
      if (total > kMaxElements)
        return opError(op, "its result exceeds the evaluator's limit of " +
                               llvm::Twine(kMaxElements) + " elements");
    }
  }
  return llvm::Error::success();
}

namespace {
llvm::Error bindArgument(func::FuncOp func, unsigned index, const Buffer &arg,
                         const EvalOptions &options, Env &env) {
  BlockArgument value = func.getArgument(index);
  auto fail = [&](const llvm::Twine &message) {
    std::string type;
    llvm::raw_string_ostream os(type);
    os << value.getType();
    return errorAt(value.getLoc(), "argument #" + llvm::Twine(index) + " (" +
                                       type + "): " + message);
  };
  Buffer bound = arg;
  if (auto tensorType = dyn_cast<RankedTensorType>(value.getType())) {
    if (!arg.isTensor)
      return fail("expected a tensor, got a scalar");
    if (static_cast<int64_t>(arg.shape.size()) != tensorType.getRank())
      return fail("expected rank " + llvm::Twine(tensorType.getRank()) +
                  ", got rank " + llvm::Twine(arg.shape.size()));
    for (int64_t dim = 0; dim < tensorType.getRank(); ++dim) {
      int64_t expected = tensorType.getDimSize(dim);
      if (arg.shape[dim] < 0)
        return fail("dimension " + llvm::Twine(dim) + " is negative");
      if (!ShapedType::isDynamic(expected) && expected != arg.shape[dim])
        return fail("dimension " + llvm::Twine(dim) + " must be " +
                    llvm::Twine(expected) + ", got " +
                    llvm::Twine(arg.shape[dim]));
    }
    if (static_cast<int64_t>(arg.values.size()) != arg.numElements())
      return fail("holds " + llvm::Twine(arg.values.size()) +
                  " values for a shape of " + llvm::Twine(arg.numElements()) +
                  " elements");
  } else if (arg.isTensor || arg.values.size() != 1) {
    return fail("expected a scalar");
  }
  bound.storage = storageOf(value.getType());
  // Integer data (labels) holds integers, which doubles represent exactly
  // up to 2^53: a fraction or a larger magnitude is the caller's mistake.
  if (getElementTypeOrSelf(value).isInteger())
    for (double element : bound.values)
      if (element != std::trunc(element) || std::abs(element) > 0x1p53)
        return fail("holds " + std::to_string(element) +
                    ", not an integer the evaluator holds exactly");
  if (options.roundStorage && isa<FloatType>(getElementTypeOrSelf(value)))
    for (double &element : bound.values)
      element = roundTo(bound.storage, element);
  env.values[value] = std::move(bound);
  return llvm::Error::success();
}
} // namespace

llvm::Expected<std::vector<Buffer>> evaluate(func::FuncOp func,
                                             const std::vector<Buffer> &args,
                                             const EvalOptions &options) {
  // Callers hand over verified kernels; a function that is none gets an
  // error here rather than a crash further in.
  if (func.isExternal())
    return errorAt(func.getLoc(),
                   "function @" + func.getSymName() + " has no body");
  if (args.size() != func.getNumArguments())
    return errorAt(func.getLoc(), "function @" + func.getSymName() + " takes " +
                                      llvm::Twine(func.getNumArguments()) +
                                      " arguments, got " +
                                      llvm::Twine(args.size()));
  if (!func.getBody().hasOneBlock() ||
      func.getBody().front().getNumArguments() != func.getNumArguments())
    return errorAt(func.getLoc(), "function @" + func.getSymName() +
                                      " is not a single block that takes its "
                                      "signature's arguments");
  if (int64_t work = estimateElementOps(func, args);
      work > options.maxElementOps)
    return errorAt(func.getLoc(),
                   "evaluating @" + func.getSymName() +
                       " at these shapes takes about " + llvm::Twine(work) +
                       " element operations, over the evaluator's limit of " +
                       llvm::Twine(options.maxElementOps) +
                       " (tile-run --max-element-ops raises it)");
  Env env;
  env.options = options;
  for (unsigned index = 0; index < args.size(); ++index)
    if (llvm::Error error =
            bindArgument(func, index, args[index], options, env))
      return std::move(error);

  for (Operation &op : func.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Buffer> results;
      for (Value value : ret.getOperands())
        results.push_back(env.get(value));
      return results;
    }
    if (llvm::Error error = checkResultSizes(&op, env))
      return std::move(error);
    if (std::optional<llvm::Error> error = evalElementwise(&op, env)) {
      if (*error)
        return std::move(*error);
      continue;
    }
    if (std::optional<llvm::Error> error = evalStructural(&op, env)) {
      if (*error)
        return std::move(*error);
      continue;
    }
    if (std::optional<llvm::Error> error = evalContraction(&op, env)) {
      if (*error)
        return std::move(*error);
      continue;
    }
    return opError(&op, "the reference evaluator does not support this op");
  }
  return errorAt(func.getLoc(), "function @" + func.getSymName() +
                                    " does not end in "
                                    "func.return");
}

namespace {
/// The products a contraction takes where both operands are arguments of
/// rank 2 as given (its result's elements times the contracted size), else
/// `fallback`. Saturates at INT64_MAX.
int64_t contractionWork(Operation &op, const std::vector<Buffer> &args,
                        int64_t fallback) {
  auto shapeOf = [&](Value value) -> const std::vector<int64_t> * {
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg || arg.getArgNumber() >= args.size() ||
        args[arg.getArgNumber()].shape.size() != 2)
      return nullptr;
    return &args[arg.getArgNumber()].shape;
  };
  int64_t a = 0, b = 0, c = 0;
  if (auto contract = dyn_cast<mlir::tile::ContractOp>(op)) {
    const auto *input = shapeOf(contract.getInput());
    const auto *matrix = shapeOf(contract.getMatrix());
    if (!input || !matrix)
      return fallback;
    a = (*input)[0], b = (*input)[1];
    c = (*matrix)[1 - std::clamp<int64_t>(contract.getOver(), 0, 1)];
  } else if (auto rows = dyn_cast<mlir::tile::ContractRowsOp>(op)) {
    const auto *left = shapeOf(rows.getLeft());
    const auto *right = shapeOf(rows.getRight());
    if (!left || !right)
      return fallback;
    a = (*left)[0], b = (*left)[1], c = (*right)[1];
  } else {
    return 0;
  }
  int64_t ab, work;
  if (llvm::MulOverflow(a, b, ab) || llvm::MulOverflow(ab, c, work))
    return std::numeric_limits<int64_t>::max();
  return work;
}
} // namespace

int64_t estimateElementOps(func::FuncOp func, const std::vector<Buffer> &args) {
  int64_t largest = 1, longest = 1, ops = 0;
  // Shapes as given (an API caller's may be absurd): bounded, not
  // multiplied out.
  for (const Buffer &arg : args) {
    largest = std::max(largest,
                       boundedElements(arg.shape).value_or(kMaxElements + 1));
    for (int64_t size : arg.shape)
      longest = std::max(longest, size);
  }
  for (Block &block : func.getBody())
    for (Operation &op : block) {
      ++ops;
      for (Type type : op.getResultTypes())
        if (auto tensor = dyn_cast<RankedTensorType>(type))
          if (tensor.hasStaticShape())
            largest = std::max(
                largest,
                boundedElements(tensor.getShape()).value_or(kMaxElements));
    }
  int64_t work;
  if (llvm::MulOverflow(ops, largest, work))
    return std::numeric_limits<int64_t>::max();
  // A contraction's elements are each a sum of products: counted exactly
  // where its operands are arguments; else the largest value times the
  // longest dimension bounds it (and the evaluation checks the count it
  // meets, ContractionEval.cpp).
  int64_t bound;
  if (llvm::MulOverflow(largest, longest, bound))
    bound = std::numeric_limits<int64_t>::max();
  for (Block &block : func.getBody())
    for (Operation &op : block)
      if (llvm::AddOverflow(work, contractionWork(op, args, bound), work))
        return std::numeric_limits<int64_t>::max();
  return work;
}

} // namespace tile::interp
