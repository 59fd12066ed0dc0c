//===- Evaluator.h - float64 reference evaluator of tile IR -----*- C++ -*-===//
//
// `tile::interp` runs a tile function on host buffers in float64. It is the
// numerical ground truth for everything else: GPU results, derived gradients
// and finite differences are all compared against it. Rounding happens only
// where the GPU rounds (at `tile.cast` and at storage-typed inputs), so a
// bf16 kernel's reference sees the same bf16 inputs the GPU does.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_INTERP_EVALUATOR_H
#define TILE_INTERP_EVALUATOR_H

#include "tile/Interp/FloatFormats.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace tile::interp {

/// A host value: a tensor (row-major, any rank) or a scalar. Elements are
/// held as double whatever the IR type; `storage` records the float type the
/// values were rounded to (integers and booleans are held exactly).
struct Buffer {
  std::vector<int64_t> shape;
  std::vector<double> values;
  bool isTensor = true;
  StorageType storage = StorageType::F64;

  static Buffer tensor(std::vector<int64_t> shape, StorageType storage,
                       std::vector<double> values = {});
  static Buffer scalar(double value, StorageType storage = StorageType::F64);
  /// Number of elements the shape describes (1 for scalars and rank 0).
  int64_t numElements() const;
};

/// The element operations one evaluation may take by default: about 20 s
/// of a release build on the build machine (~50 M element operations a
/// second, measured with tile-run on a 4096 x 1024 kernel; docs/Robustness.md).
constexpr int64_t kDefaultMaxElementOps = int64_t(1) << 30;

struct EvalOptions {
  /// Round at casts and storage-typed inputs as the GPU does. With false the
  /// whole function is evaluated in exact float64 (casts are identities),
  /// which is what closed-form comparisons and finite differences want.
  bool roundStorage = true;
  /// Evaluations estimated to take more element operations than this
  /// (estimateElementOps) are refused before they start, with the estimate
  /// and the limit: a reference for tests must not run for minutes.
  int64_t maxElementOps = kDefaultMaxElementOps;
};

/// About how many element operations evaluating `func` on `args` takes:
/// its ops times the largest value they can make (the largest argument or
/// static result type), and each contraction's products (exact where its
/// operands are arguments; else that value times the longest dimension).
/// Saturates at INT64_MAX.
int64_t estimateElementOps(mlir::func::FuncOp func,
                           const std::vector<Buffer> &args);

/// Evaluates `func` on `args` (one per function argument, in order) and
/// returns its results. Errors name the op and location that failed:
/// argument count/shape/type mismatches, out-of-range slices, unsupported ops.
llvm::Expected<std::vector<Buffer>> evaluate(mlir::func::FuncOp func,
                                             const std::vector<Buffer> &args,
                                             const EvalOptions &options = {});

/// The most elements one value may hold (512 MiB of doubles): the
/// evaluator is a reference for tests, and a kernel or an input that would
/// exceed this gets an error naming the size instead of an abort in the
/// allocator.
constexpr int64_t kMaxElements = int64_t(1) << 26;

/// The elements `shape` describes, or std::nullopt when that exceeds
/// kMaxElements (checked before each product, which could wrap).
std::optional<int64_t> boundedElements(llvm::ArrayRef<int64_t> shape);

/// An error read as the tools' diagnostics read: `file:line:col: error: `
/// and `message`, from the first file location `loc` holds. Every error
/// about the IR goes through here, so none comes without its place.
llvm::Error errorAt(mlir::Location loc, const llvm::Twine &message);

/// The storage type of a float element type (bf16, f16, f32, f64), if any.
std::optional<StorageType> getStorageType(mlir::Type elementType);

} // namespace tile::interp

#endif // TILE_INTERP_EVALUATOR_H
