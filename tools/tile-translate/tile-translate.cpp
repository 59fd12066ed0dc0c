//===- tile-translate.cpp - translations out of tile IR ------------------===//
//
// Translations from tile IR to what a runtime consumes: the kernel
// signatures (--tile-kernel-signature), the launch manifest
// (--tile-manifest) and PTX (--tile-to-ptx). The driver is Tile's own
// rather than mlirTranslateMain, so that it can bound the input's nesting
// before MLIR's recursive parser reads it and run on a large stack
// (ToolSupport.h), and so that --help shows only these options
// (CommandLine.h).
//
//===----------------------------------------------------------------------===//

#include "tile/Conversion/TileToGPU/Manifest.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/Transforms/Passes.h"
#include "tile/InitTile.h"
#include "tile/Pipelines/Pipelines.h"
#include "tile/Target/KernelSignature.h"
#include "tile/Tools/CommandLine.h"
#include "tile/Tools/ToolSupport.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;

namespace {
cl::OptionCategory category("tile-translate options");

enum class Translation { Signature, Manifest, Ptx };

// Not cl::Required: LLVM would say "must be specified" once per value.
cl::opt<Translation> translation(
    cl::desc("Translation:"), cl::cat(category),
    cl::values(clEnumValN(Translation::Signature, "tile-kernel-signature",
                          "describe every tile.kernel's arguments and results "
                          "as JSON"),
               clEnumValN(Translation::Manifest, "tile-manifest",
                          "describe how to launch each tile.kernel's GPU "
                          "kernels as JSON"),
               clEnumValN(Translation::Ptx, "tile-to-ptx",
                          "lower every tile.kernel and compile every "
                          "gpu.module to PTX text")));
cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input file>"),
                                   cl::init("-"), cl::cat(category));
cl::opt<std::string> outputFilename("o", cl::desc("output file"),
                                    cl::value_desc("filename"), cl::init("-"),
                                    cl::cat(category));
cl::opt<std::string> chip("tile-chip",
                          cl::desc("target chip for --tile-to-ptx: sm_80, "
                                   "sm_86, sm_89, sm_90a, sm_100, ..."),
                          cl::init("sm_80"), cl::cat(category));
cl::opt<std::string>
    features("tile-ptx-features",
             cl::desc("PTX features for --tile-to-ptx (default: the chip's "
                      "minimum PTX version)"),
             cl::init(""), cl::cat(category));
cl::opt<std::string>
    libdevice("tile-libdevice",
              cl::desc("libdevice.10.bc for --tile-to-ptx (default: from "
                       "CUDA_HOME, else /usr/local/cuda)"),
              cl::init(""), cl::cat(category));

cl::opt<int64_t>
    sms("tile-sms",
        cl::desc("the SMs of the GPU persistent grids are sized for, for "
                 "--tile-to-ptx and --tile-manifest alike (default: 132, an "
                 "H100 SXM or H200)"),
        cl::init(tile::DeviceDescription().sms), cl::cat(category));

mlir::LogicalResult translate(mlir::ModuleOp module, llvm::raw_ostream &os) {
  tile::DeviceDescription device;
  device.sms = sms;
  switch (translation) {
  case Translation::Signature:
    return mlir::tile::writeKernelSignatures(module, os);
  case Translation::Manifest: {
    // The schedule the PTX would be lowered with, so that the two agree.
    mlir::PassManager pm(module.getContext());
    pm.addPass(mlir::tile::createTileSchedulePass(device));
    if (mlir::failed(pm.run(module)))
      return mlir::failure();
    return mlir::tile::writeKernelManifest(module, os);
  }
  case Translation::Ptx: {
    mlir::tile::PtxOptions options;
    options.device = device;
    options.chip = chip;
    options.features = features;
    options.libdevice = libdevice;
    auto compiled = mlir::tile::compileToPtx(module, options);
    if (mlir::failed(compiled))
      return mlir::failure();
    for (auto &[name, text] : *compiled)
      os << "// gpu.module @" << name << "\n" << text;
    return mlir::success();
  }
  }
  return mlir::failure();
}

int runTranslate(int argc, char **argv) {
  mlir::tile::prepareCommandLine("tile-translate", {&category});
  cl::ParseCommandLineOptions(argc, argv, "Tile translation driver\n");
  if (translation.getNumOccurrences() == 0) {
    llvm::errs() << "error: choose a translation: --tile-kernel-signature, "
                    "--tile-manifest or --tile-to-ptx (--help says more)\n";
    return 1;
  }
  if (translation == Translation::Ptx && !mlir::tile::isKnownChip(chip)) {
    llvm::errs() << "error: --tile-chip=" << chip << ": unknown chip; Tile "
                 << "compiles for " << mlir::tile::knownChips() << "\n";
    return 1;
  }

  std::string error;
  auto input = mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  unsigned id = sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  if (mlir::tile::reportUnparsableInput(sourceMgr, id))
    return 1;

  mlir::DialectRegistry registry;
  mlir::tile::registerTileDialects(registry);
  mlir::tile::registerGpuTargets(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module ||
      mlir::failed(mlir::tile::verifyOnlyKernels(*module, "tile-translate")))
    return 1;

  // The output is written only when the translation succeeds: a failed run
  // leaves no partial file behind.
  std::string text;
  llvm::raw_string_ostream os(text);
  if (mlir::failed(translate(*module, os)))
    return 1;
  auto output = mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  output->os() << text;
  output->keep();
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  return mlir::tile::runWithLargeStack(
      [&] { return runTranslate(argc, argv); });
}
