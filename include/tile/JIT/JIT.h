//===- JIT.h - compile tile kernels in-process, with a cache ----*- C++ -*-===//
//
// `tile::jit` turns tile IR text into PTX and a kernel manifest through the
// same pipeline builder the tools use, optionally deriving the backward
// kernels and specializing the storage dtype first. Results are cached in
// memory and on disk (TILE_CACHE_DIR, else $XDG_CACHE_HOME/tile, else
// ~/.cache/tile), keyed by a hash of the IR, the options, the target chip
// and the compiler version. A corrupt or truncated cache entry is detected
// and rebuilt. A Jit may be used from several threads at once.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_JIT_JIT_H
#define TILE_JIT_JIT_H

#include "tile/JIT/CompiledKernels.h"
#include "tile/Runtime/Runtime.h"
#include "tile/Runtime/Status.h"
#include "tile/Target/DeviceDescription.h"
#include "tile/Target/ScheduleOptions.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace tile::jit {

struct CompileOptions {
  /// Target chip, e.g. "sm_90a" (rt::Device::chip()); never guessed. Empty:
  /// no PTX — the kernels are only prepared for the host (the derived IR,
  /// its signature and manifest: enough to describe, check and evaluate).
  std::string chip = "sm_80";
  /// The name diagnostics give the source ("kernel": `kernel:3:7: error:`).
  std::string sourceName = "kernel";
  /// "", or "bf16"/"f16"/"f32": the storage type every bf16/f16 tensor of
  /// the kernels becomes (one kernel source serves all dtypes).
  std::string dtype;
  /// Also derive the backward kernels (tile-differentiate).
  bool differentiate = false;
  /// "recompute" or "save-row-stats".
  std::string policy = "recompute";
  bool mainGrad = false;
  /// The backward kernels also return the forward's results (tile.primal).
  bool returnPrimal = false;
  /// tile-schedule's overrides (ScheduleOptions.def; 0 and false: its
  /// choices), for experiments.
  ScheduleOptions schedule;
  /// Widths to specialize for, by tensor argument index, of every kernel
  /// (forward and derived backward share their leading arguments): the
  /// GPU kernels use them as constants, and calls must match them.
  std::map<unsigned, int64_t> widths;
  /// The GPU persistent grids are sized for (rt::Device::description();
  /// the defaults are an H100 SXM's or H200's).
  DeviceDescription device;

  /// Options that compile for `device`: its chip and description.
  static CompileOptions forDevice(const rt::Device &device) {
    CompileOptions options;
    options.chip = device.chip();
    options.device = device.description();
    return options;
  }
};

/// The JIT's whole compile of a kernel source under `options` as a pass
/// pipeline `tile-opt` runs: `tile-opt kernel.mlir --pass-pipeline='...'`
/// gives the PTX the JIT builds (in a gpu.binary), and fails where it fails.
/// Empty where `options` has no chip and there is nothing to run.
std::string passPipeline(const CompileOptions &options);

struct CacheStats {
  uint64_t memoryHits = 0, diskHits = 0, compiles = 0, corruptEntries = 0;
};

class Jit {
public:
  /// `cacheDir`: empty for the default directory, "none" for no disk cache.
  explicit Jit(std::string cacheDir = "");
  ~Jit();

  rt::StatusOr<CompiledKernels> compile(const std::string &source,
                                        const CompileOptions &options);
  /// The same for a module built in C++: its printed form is the source
  /// (and the cache key), so it is compiled in a context of the JIT's own.
  rt::StatusOr<CompiledKernels> compile(mlir::ModuleOp module,
                                        const CompileOptions &options);

  CacheStats stats() const;
  const std::string &cacheDirectory() const { return directory; }

  /// The compiler's identity, part of every key: Tile's version and git
  /// revision, LLVM's, and the binary holding the JIT (so that a rebuild
  /// never reuses PTX an older compiler wrote).
  static std::string compilerVersion();

private:
  std::string directory;
  mutable std::mutex mutex;
  std::map<std::string, CompiledKernels> memory;
  CacheStats counters;
};

} // namespace tile::jit

#endif // TILE_JIT_JIT_H
