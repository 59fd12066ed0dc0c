//===- TileInterfaces.h - op interfaces of the tile dialect -----*- C++ -*-===//
//
// DifferentiableOpInterface: the reverse-mode derivative rule of an op.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_IR_TILEINTERFACES_H
#define TILE_DIALECT_TILE_IR_TILEINTERFACES_H

#include "tile/Dialect/Tile/IR/AdjointBuilder.h"

#include "mlir/IR/OpDefinition.h"

#include "tile/Dialect/Tile/IR/TileInterfaces.h.inc"

#endif // TILE_DIALECT_TILE_IR_TILEINTERFACES_H
