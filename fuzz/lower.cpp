//===- lower.cpp - fuzz the GPU lowering, the manifest and PTX -----------===//
//
// A verified module through the signature and manifest translations and
// the whole pipeline to PTX (tile-schedule, convert-tile-to-gpu, NVVM, the
// NVPTX backend), as tile-translate runs them.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "tile/Conversion/TileToGPU/Manifest.h"
#include "tile/Pipelines/Pipelines.h"
#include "tile/Target/KernelSignature.h"

#include "llvm/Support/raw_ostream.h"

static void lower(const uint8_t *data, size_t size) {
  mlir::OwningOpRef<mlir::ModuleOp> module = ::tile::fuzz::parse(data, size);
  if (!module)
    return;
  (void)mlir::tile::writeKernelSignatures(*module, llvm::nulls());
  (void)mlir::tile::writeKernelManifest(*module, llvm::nulls());
  (void)mlir::tile::compileToPtx(*module, mlir::tile::PtxOptions());
}

TILE_FUZZ_HARNESS(lower)
