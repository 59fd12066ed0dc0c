//===- TileInterfaces.h - op interfaces of the tile dialect -----*- C++ -*-===//
//
// DifferentiableOpInterface: the reverse-mode derivative rule of an op, and
// how a per-row change moves through it.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_IR_TILEINTERFACES_H
#define TILE_DIALECT_TILE_IR_TILEINTERFACES_H

#include "tile/Dialect/Tile/IR/AdjointBuilder.h"
#include "tile/Dialect/Tile/IR/RowShift.h"

#include "mlir/IR/OpDefinition.h"

#include "tile/Dialect/Tile/IR/TileInterfaces.h.inc"

#endif // TILE_DIALECT_TILE_IR_TILEINTERFACES_H
