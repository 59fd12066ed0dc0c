//===- EvalInternal.h - shared pieces of the evaluator ----------*- C++ -*-===//
//
// Private to lib/Interp: the evaluation environment and the per-family op
// evaluators (elementwise in ElementwiseEval.cpp, data movement and
// reductions in StructuralEval.cpp, contractions in ContractionEval.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_INTERP_EVALINTERNAL_H
#define TILE_LIB_INTERP_EVALINTERNAL_H

#include "tile/Interp/Evaluator.h"
#include <cmath>
#include <limits>

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

namespace tile::interp::detail {

struct Env {
  llvm::DenseMap<mlir::Value, Buffer> values;
  EvalOptions options;

  const Buffer &get(mlir::Value value) const {
    return values.find(value)->second;
  }
};

/// An error that names the op and its source location.
llvm::Error opError(mlir::Operation *op, const llvm::Twine &message);

/// Evaluates `op` if it is an arith/math elementwise op. Returns
/// std::nullopt when the op belongs to another family.
std::optional<llvm::Error> evalElementwise(mlir::Operation *op, Env &env);

/// Evaluates tile data-movement and reduction ops and tensor.dim.
std::optional<llvm::Error> evalStructural(mlir::Operation *op, Env &env);

/// Evaluates tile.contract and tile.contract_rows (ContractionEval.cpp).
std::optional<llvm::Error> evalContraction(mlir::Operation *op, Env &env);

/// The elements of a contraction's result (larger than either operand's,
/// unlike every other op's; kMaxElements + 1 for any count over the
/// limit), or std::nullopt for any other op.
std::optional<int64_t> contractionResultElements(mlir::Operation *op,
                                                 const Env &env);

/// Integers are held in double (exactly below 2^53); a value out of
/// int64's range saturates instead of converting with undefined behavior.
inline int64_t asInt(double value) {
  if (std::isnan(value))
    return 0;
  if (value >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (value <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

/// Checks that `op`'s results fit in kMaxElements before it is evaluated.
llvm::Error checkResultSizes(mlir::Operation *op, Env &env);

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

/// The storage rounding of an MLIR value's element type (F64 for non-floats).
StorageType storageOf(mlir::Type type);

} // namespace tile::interp::detail

#endif // TILE_LIB_INTERP_EVALINTERNAL_H
