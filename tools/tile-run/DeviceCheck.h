//===- DeviceCheck.h - tile-run --device: the GPU against the evaluator ---===//
//
// The differential check that closes the loop from IR to hardware: the same
// kernel source JIT-compiled for GPU 0 and run on the inputs the evaluator
// saw, forward and derived backward, every result compared element by
// element with the evaluator's (outputs poisoned with NaN first).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_TILE_RUN_DEVICECHECK_H
#define TILE_TOOLS_TILE_RUN_DEVICECHECK_H

#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/Interp/Evaluator.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace tile::run {

struct DeviceCheckOptions {
  /// Also derive the backward (tile::jit's differentiate, the recompute
  /// policy unless `policy` says otherwise) and check it on random
  /// cotangents.
  bool backward = true;
  mlir::tile::RecomputePolicy policy = mlir::tile::RecomputePolicy::Recompute;
  uint64_t seed = 0;
};

/// One set of inputs, and how to name it ("7x13,13").
struct DeviceCase {
  std::string label;
  std::vector<interp::Buffer> inputs;
};

/// Compiles `func` (defined in `source`, the text it was parsed from) once
/// for GPU 0, runs it on each case's inputs and compares its results, and
/// its derived backward's, with the evaluator's. Prints a line per result
/// to `os`; 0 when all agree, 1 when one differs or anything fails (no GPU
/// included: it says so). Derives the backward into `func`'s module.
int runDeviceCheck(mlir::func::FuncOp func, const std::string &source,
                   const std::vector<DeviceCase> &cases,
                   const DeviceCheckOptions &options, llvm::raw_ostream &os);

} // namespace tile::run

#endif // TILE_TOOLS_TILE_RUN_DEVICECHECK_H
