//===- InitTile.h - register what the tile tools use ------------*- C++ -*-===//
//
// Registration lives in one translation unit (lib/Registration) because the
// headers it needs are the most expensive in the build.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_INITTILE_H
#define TILE_INITTILE_H

namespace mlir {
class DialectRegistry;
namespace tile {
/// The tile dialect and the upstream dialects kernels are written with.
void registerTileDialects(DialectRegistry &registry);
/// The passes `tile-opt` offers, one by one (no registerAllPasses).
void registerTilePasses();
} // namespace tile
} // namespace mlir

#endif // TILE_INITTILE_H
