//===- Passes.h - the PTX pipeline's own steps ------------------*- C++ -*-===//

#ifndef TILE_PIPELINES_PASSES_H
#define TILE_PIPELINES_PASSES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tile {

#define GEN_PASS_DECL
#include "tile/Pipelines/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tile/Pipelines/Passes.h.inc"

} // namespace mlir::tile

#endif // TILE_PIPELINES_PASSES_H
