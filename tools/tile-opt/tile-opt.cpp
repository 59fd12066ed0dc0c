//===- tile-opt.cpp - the tile optimizer driver --------------------------===//
//
// mlir-opt with the tile dialect, the upstream dialects kernels use and the
// tile pipeline's passes. Malformed input gives a located diagnostic and
// exit code 1.
//
//===----------------------------------------------------------------------===//

#include "tile/Conversion/Passes.h"
#include "tile/InitTile.h"
#include "tile/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::tile::registerTileDialects(registry);
  mlir::tile::registerGpuTargets(registry);
  mlir::tile::registerTilePasses();
  mlir::tile::registerTilePipelines();
  mlir::tile::registerTileConversionPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tile optimizer driver\n", registry));
}
