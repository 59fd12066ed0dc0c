//===- tile-opt.cpp - the tile optimizer driver --------------------------===//
//
// mlir-opt with the tile dialect, the upstream dialects kernels use and the
// tile pipeline's passes. Malformed input gives a located diagnostic and
// exit code 1: the input's nesting is bounded before MLIR's recursive
// parser sees it, and the work runs on a large stack (ToolSupport.h).
//
//===----------------------------------------------------------------------===//

#include "tile/Conversion/Passes.h"
#include "tile/InitTile.h"
#include "tile/Pipelines/Pipelines.h"
#include "tile/Tools/CommandLine.h"
#include "tile/Tools/ToolSupport.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

namespace {
int runOpt(int argc, char **argv) {
  // Before MLIR's driver registers its options: LLVM's are hidden, and
  // --mlir-print-op-on-diagnostic is off unless asked for.
  mlir::tile::prepareCommandLine("tile-opt", {});
  mlir::DialectRegistry registry;
  mlir::tile::registerTileDialects(registry);
  mlir::tile::registerGpuTargets(registry);
  mlir::tile::registerTilePasses();
  mlir::tile::registerTilePipelines();
  mlir::tile::registerTileConversionPasses();
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "Tile optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // These print and read no input: upstream's driver does it.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  // The check reads the buffer through a SourceMgr of its own; the driver
  // gets a copy of the text (it takes the buffer).
  llvm::SourceMgr sourceMgr;
  unsigned id = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(input->getBuffer(),
                                           input->getBufferIdentifier()),
      llvm::SMLoc());
  if (mlir::tile::reportUnparsableInput(sourceMgr, id))
    return 1;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  return mlir::tile::runWithLargeStack([&] { return runOpt(argc, argv); });
}
