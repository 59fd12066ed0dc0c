//===- main.cpp - tile-run's entry point ----------------------------------===//

#include "TileRun.h"

#include "tile/Tools/ToolSupport.h"

#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  return mlir::tile::runWithLargeStack(
      [&] { return tile::run::runTileRun(argc, argv); });
}
