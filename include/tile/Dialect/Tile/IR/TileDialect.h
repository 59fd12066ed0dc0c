//===- TileDialect.h - the tile dialect -------------------------*- C++ -*-===//
//
// Declares the tile dialect, its enums and attributes. Include TileOps.h for
// the operations.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_IR_TILEDIALECT_H
#define TILE_DIALECT_TILE_IR_TILEDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "tile/Dialect/Tile/IR/ValueRoles.h"

#include "tile/Dialect/Tile/IR/TileOpsDialect.h.inc"

#include "tile/Dialect/Tile/IR/TileEnums.h.inc"

#endif // TILE_DIALECT_TILE_IR_TILEDIALECT_H
