//===- Passes.h - tile dialect transformation passes ------------*- C++ -*-===//

#ifndef TILE_DIALECT_TILE_TRANSFORMS_PASSES_H
#define TILE_DIALECT_TILE_TRANSFORMS_PASSES_H

#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/Target/DeviceDescription.h"
#include "tile/Target/ScheduleOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tile {

#define GEN_PASS_DECL
#include "tile/Dialect/Tile/Transforms/Passes.h.inc"

/// tile-schedule for the device `device` describes, with `schedule`'s
/// overrides (ScheduleOptions.def).
std::unique_ptr<Pass>
createTileSchedulePass(const ::tile::DeviceDescription &device,
                       const ::tile::ScheduleOptions &schedule = {});

#define GEN_PASS_REGISTRATION
#include "tile/Dialect/Tile/Transforms/Passes.h.inc"

} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_TRANSFORMS_PASSES_H
