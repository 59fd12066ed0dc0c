//===- Pipelines.h - the one pipeline from GPU IR to PTX --------*- C++ -*-===//
//
// Every tool and the JIT lower through these functions, so they cannot drift
// apart: tile kernels are scheduled and converted to gpu.func kernels over
// flat buffers, which are lowered through NVVM to PTX.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_PIPELINES_PIPELINES_H
#define TILE_PIPELINES_PIPELINES_H

#include "tile/Target/DeviceDescription.h"
#include "tile/Target/ScheduleOptions.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
class DialectRegistry;
class ModuleOp;
class OpPassManager;
} // namespace mlir

namespace mlir::tile {

struct PtxOptions {
  /// The target chip: sm_80 by default; sm_90a for Hopper-only features.
  std::string chip = "sm_80";
  /// PTX features; empty picks the minimum PTX version the chip needs
  /// (ptxFeaturesFor).
  std::string features;
  /// libdevice.10.bc, linked when kernels call math functions. Empty means
  /// defaultLibdevicePath(). Never searched for implicitly: a missing file
  /// is an error, not PTX with unresolved __nv_ symbols.
  std::string libdevice;
  unsigned optLevel = 3;
  /// tile-schedule's overrides (ScheduleOptions.def; 0 and false: its
  /// choice), for experiments.
  ::tile::ScheduleOptions schedule;
  /// The GPU tile-schedule sizes persistent grids for.
  ::tile::DeviceDescription device;
};

/// $CUDA_HOME (then $CUDA_PATH, then /usr/local/cuda) +
/// /nvvm/libdevice/libdevice.10.bc.
std::string defaultLibdevicePath();

/// Whether Tile compiles for `chip` (sm_80, sm_90a, ...); knownChips()
/// lists them, comma-separated, for messages.
bool isKnownChip(StringRef chip);
std::string knownChips();

/// "+ptxNN" for the lowest PTX ISA version that supports `chip` (sm_90a
/// needs 8.0: LLVM's default 6.0 aborts).
std::string ptxFeaturesFor(StringRef chip);

/// The dialects, translations and interface models the GPU pipeline uses.
void registerGpuTargets(DialectRegistry &registry);

/// gpu.module → NVVM → PTX, for every gpu.module of the module it runs on.
void buildGpuToPtxPipeline(OpPassManager &pm, const PtxOptions &options);

/// tile kernels → PTX: tile-approximate-shifted-exponentials, tile-schedule,
/// tile-row-reciprocals, convert-tile-to-gpu, then the above.
void buildTileToPtxPipeline(OpPassManager &pm, const PtxOptions &options);

/// Registers `tile-gpu-to-ptx` and `tile-lower-to-ptx` (with
/// chip/features/libdevice options) for tile-opt.
void registerTilePipelines();

/// (gpu.binary name, PTX text) of every gpu.binary in `module`, after the
/// pipeline ran; an error where there is none.
FailureOr<std::vector<std::pair<std::string, std::string>>>
collectPtx(ModuleOp module);

/// Runs the pipeline on `module` — from tile kernels when it has no
/// gpu.module yet — and returns (gpu.module name, PTX text) for each module
/// compiled. Diagnostics go to the context's handler.
FailureOr<std::vector<std::pair<std::string, std::string>>>
compileToPtx(ModuleOp module, const PtxOptions &options);

} // namespace mlir::tile

#endif // TILE_PIPELINES_PIPELINES_H
