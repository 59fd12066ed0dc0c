//===- Registration.cpp - dialects and passes the tile tools use ---------===//

#include "tile/Dialect/Tile/Derivatives/Derivatives.h"
#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/Transforms/Passes.h"
#include "tile/InitTile.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::tile::registerTileDialects(DialectRegistry &registry) {
  registry.insert<TileDialect, arith::ArithDialect, math::MathDialect,
                  tensor::TensorDialect, func::FuncDialect>();
  registerDerivativeModels(registry);
}

void mlir::tile::registerTilePasses() {
  registerCanonicalizerPass();
  registerCSEPass();
  registerSymbolDCEPass();
  registerTileTransformsPasses();
}
