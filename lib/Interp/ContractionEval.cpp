//===- ContractionEval.cpp - tile.contract and tile.contract_rows --------===//
//
// Each result element is a dot product over the contracted dimension, summed
// in float64 with Neumaier's compensation as the reductions are: the
// reference a tensor core's fp32 accumulation is held to. Sizes are checked
// here, at run time, where the types left them dynamic.
//
//===----------------------------------------------------------------------===//

#include "EvalInternal.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
namespace t = mlir::tile;

namespace tile::interp {
using namespace detail;

namespace {
/// Σ a[i·aStride]·b[i·bStride] over i < n, compensated.
double dot(const double *a, int64_t aStride, const double *b, int64_t bStride,
           int64_t n) {
  double sum = 0.0, compensation = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double term = a[i * aStride] * b[i * bStride];
    double next = sum + term;
    if (!std::isfinite(next))
      compensation = 0.0; // inf/NaN: no error term to track
    else if (std::fabs(sum) >= std::fabs(term))
      compensation += (sum - next) + term;
    else
      compensation += (term - next) + sum;
    sum = next;
  }
  return sum + compensation;
}

/// The elements of a `rows` x `columns` result, refused over the
/// evaluator's limits: the result's size (a dimension of size 0 bounds
/// nothing, so the product is checked, never wrapped), and its work, each
/// element a sum of `terms` products. estimateElementOps bounds the work
/// from the arguments, but an operand made in the kernel (a concatenation
/// of concatenations) may be larger than any of them.
llvm::Expected<int64_t> checkedElements(Operation *op, int64_t rows,
                                        int64_t columns, int64_t terms,
                                        const Env &env) {
  std::optional<int64_t> elements = boundedElements({rows, columns});
  if (!elements)
    return opError(op, "its result of " + llvm::Twine(rows) + " x " +
                           llvm::Twine(columns) +
                           " elements exceeds the evaluator's limit of " +
                           llvm::Twine(kMaxElements));
  int64_t work;
  if (llvm::MulOverflow(*elements, terms, work) ||
      work > env.options.maxElementOps)
    return opError(op, "takes " + llvm::Twine(*elements) + " sums of " +
                           llvm::Twine(terms) +
                           " products, over the evaluator's limit of " +
                           llvm::Twine(env.options.maxElementOps) +
                           " element operations");
  return *elements;
}

/// `init` added to `result` where the op has one.
llvm::Error addInit(Operation *op, Value init, Buffer &result, Env &env) {
  if (!init)
    return llvm::Error::success();
  const Buffer &acc = env.get(init);
  if (acc.shape != result.shape)
    return opError(op, "the accumulator's shape differs from the result's");
  for (size_t i = 0; i < result.values.size(); ++i)
    result.values[i] += acc.values[i];
  return llvm::Error::success();
}

llvm::Error evalContract(t::ContractOp op, Env &env) {
  const Buffer &input = env.get(op.getInput());
  const Buffer &matrix = env.get(op.getMatrix());
  int64_t over = op.getOver();
  int64_t rows = input.shape[0], width = input.shape[1];
  if (matrix.shape[over] != width)
    return opError(op, "the input's width " + llvm::Twine(width) +
                           " differs from the matrix's dimension " +
                           llvm::Twine(over) + " (" +
                           llvm::Twine(matrix.shape[over]) + ")");
  int64_t columns = matrix.shape[1 - over];
  llvm::Expected<int64_t> elements =
      checkedElements(op, rows, columns, width, env);
  if (!elements)
    return elements.takeError();
  Buffer result = Buffer::tensor({rows, columns}, storageOf(op.getType()));
  result.values.assign(*elements, 0.0);
  // over 1: the matrix's row n is contiguous; over 0: its column n strides
  // by its width. Sums of nothing (width 0) stay 0, and an empty operand
  // is never indexed.
  int64_t step = over == 1 ? 1 : matrix.shape[1];
  for (int64_t r = 0; r < rows && width > 0; ++r)
    for (int64_t n = 0; n < columns; ++n)
      result.values[r * columns + n] =
          dot(input.values.data() + r * width, 1,
              matrix.values.data() + (over == 1 ? n * width : n), step, width);
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

llvm::Error evalContractRows(t::ContractRowsOp op, Env &env) {
  const Buffer &left = env.get(op.getLeft());
  const Buffer &right = env.get(op.getRight());
  int64_t rows = left.shape[0];
  if (right.shape[0] != rows)
    return opError(op, "the left's rows (" + llvm::Twine(rows) +
                           ") differ from the right's (" +
                           llvm::Twine(right.shape[0]) + ")");
  int64_t p = left.shape[1], q = right.shape[1];
  llvm::Expected<int64_t> elements = checkedElements(op, p, q, rows, env);
  if (!elements)
    return elements.takeError();
  Buffer result = Buffer::tensor({p, q}, storageOf(op.getType()));
  result.values.assign(*elements, 0.0);
  for (int64_t i = 0; i < p && rows > 0; ++i)
    for (int64_t j = 0; j < q; ++j)
      result.values[i * q + j] =
          dot(left.values.data() + i, p, right.values.data() + j, q, rows);
  if (llvm::Error error = addInit(op, op.getInit(), result, env))
    return error;
  env.values[op] = std::move(result);
  return llvm::Error::success();
}
} // namespace

std::optional<llvm::Error> detail::evalContraction(Operation *op, Env &env) {
  return llvm::TypeSwitch<Operation *, std::optional<llvm::Error>>(op)
      .Case([&](t::ContractOp contract) { return evalContract(contract, env); })
      .Case([&](t::ContractRowsOp rows) { return evalContractRows(rows, env); })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<int64_t> detail::contractionResultElements(Operation *op,
                                                         const Env &env) {
  // Over the limit (or past int64) reads as one element more than it.
  if (auto contract = dyn_cast<t::ContractOp>(op))
    return boundedElements(
               {env.get(contract.getInput()).shape[0],
                env.get(contract.getMatrix()).shape[1 - contract.getOver()]})
        .value_or(kMaxElements + 1);
  if (auto rows = dyn_cast<t::ContractRowsOp>(op))
    return boundedElements({env.get(rows.getLeft()).shape[1],
                            env.get(rows.getRight()).shape[1]})
        .value_or(kMaxElements + 1);
  return std::nullopt;
}

} // namespace tile::interp
