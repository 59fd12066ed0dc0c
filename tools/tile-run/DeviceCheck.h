//===- DeviceCheck.h - tile-run --device: the GPU against the evaluator ---===//
//
// The differential check that closes the loop from IR to hardware: the same
// kernel source JIT-compiled for GPU 0 and run on the inputs the evaluator
// saw, forward and (with --gradient) derived backward, every result
// compared element by element with the evaluator's (outputs poisoned with
// NaN first). With --bench each kernel is also timed, in GB/s next to the
// same-size stream kernel.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_TILE_RUN_DEVICECHECK_H
#define TILE_TOOLS_TILE_RUN_DEVICECHECK_H

#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/Interp/Evaluator.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace tile::run {

/// tile-run's exit status when --device finds no usable GPU (automake's
/// "skipped"): CI without a GPU tells it from a failed check.
constexpr int kNoDeviceStatus = 77;

struct DeviceCheckOptions {
  /// The recompute policy the backward was derived with (the JIT derives
  /// the GPU's with it too).
  mlir::tile::RecomputePolicy policy = mlir::tile::RecomputePolicy::Recompute;
  uint64_t seed = 0;
  /// The arguments' names (RunData.h's argumentNames), for output files.
  std::vector<std::string> argumentNames;
  /// Where to write the case's inputs, the evaluator's results and the
  /// GPU's (`<stem>.gpu.npy`); empty: nowhere. One case only.
  std::string outputDir;
  /// Compile the kernels for each case's widths (the JIT's specialization:
  /// the width of every [rows, width] argument a constant), not once for
  /// any width.
  bool specializeWidths = false;
  /// Timed runs per kernel for --bench; 0 times nothing.
  int benchIterations = 0;
  /// The evaluator's work limit for each case's reference
  /// (interp::EvalOptions::maxElementOps).
  int64_t maxElementOps = interp::kDefaultMaxElementOps;
};

/// One set of inputs, and how to name it ("7x13,13").
struct DeviceCase {
  std::string label;
  std::vector<interp::Buffer> inputs;
};

/// Compiles `func` (defined in `source`, the text it was parsed from) for
/// GPU 0 — with its backward where `derived` (the evaluator's, derived with
/// options.policy) is given — runs it on each case's inputs (the backward on
/// seeded cotangents) and compares every result with the evaluator's.
/// Prints a line per result to `os`; 0 when all agree, 1 when one differs
/// or anything fails, kNoDeviceStatus without a usable GPU.
int runDeviceCheck(mlir::func::FuncOp func,
                   const std::optional<mlir::tile::DerivedKernel> &derived,
                   const std::string &source,
                   const std::vector<DeviceCase> &cases,
                   const DeviceCheckOptions &options, llvm::raw_ostream &os);

} // namespace tile::run

#endif // TILE_TOOLS_TILE_RUN_DEVICECHECK_H
