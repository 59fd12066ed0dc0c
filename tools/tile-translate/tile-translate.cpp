//===- tile-translate.cpp - translations out of tile IR ------------------===//
//
// Translations from tile IR to what a runtime consumes: the kernel
// signatures (--tile-kernel-signature) and PTX (--tile-to-ptx, from the gpu
// dialect for now; the tile lowering and the kernel manifest come next).
//
//===----------------------------------------------------------------------===//

#include "tile/Conversion/TileToGPU/Manifest.h"
#include "tile/InitTile.h"
#include "tile/Pipelines/Pipelines.h"
#include "tile/Target/KernelSignature.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"

static llvm::cl::opt<std::string>
    chip("tile-chip", llvm::cl::desc("target chip for --tile-to-ptx"),
         llvm::cl::init("sm_80"));
static llvm::cl::opt<std::string> features(
    "tile-ptx-features",
    llvm::cl::desc("PTX features for --tile-to-ptx (default: the chip's "
                   "minimum PTX version)"),
    llvm::cl::init(""));
static llvm::cl::opt<std::string>
    libdevice("tile-libdevice",
              llvm::cl::desc("libdevice.10.bc for --tile-to-ptx (default: from "
                             "CUDA_HOME, else /usr/local/cuda)"),
              llvm::cl::init(""));

int main(int argc, char **argv) {
  mlir::TranslateFromMLIRRegistration signature(
      "tile-kernel-signature",
      "describe every tile.kernel's arguments and results as JSON",
      [](mlir::Operation *op, llvm::raw_ostream &os) {
        auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
        if (!module)
          return mlir::LogicalResult(op->emitError("expected a module"));
        return mlir::tile::writeKernelSignatures(module, os);
      },
      [](mlir::DialectRegistry &registry) {
        mlir::tile::registerTileDialects(registry);
      });
  mlir::TranslateFromMLIRRegistration manifest(
      "tile-manifest",
      "describe how to launch each tile.kernel's GPU kernels as JSON",
      [](mlir::Operation *op, llvm::raw_ostream &os) {
        auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
        if (!module)
          return mlir::LogicalResult(op->emitError("expected a module"));
        return mlir::tile::writeKernelManifest(module, os);
      },
      [](mlir::DialectRegistry &registry) {
        mlir::tile::registerTileDialects(registry);
      });
  mlir::TranslateFromMLIRRegistration ptx(
      "tile-to-ptx", "compile every gpu.module to PTX text",
      [](mlir::Operation *op, llvm::raw_ostream &os) {
        auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
        if (!module)
          return mlir::LogicalResult(op->emitError("expected a module"));
        mlir::tile::PtxOptions options;
        options.chip = chip;
        options.features = features;
        options.libdevice = libdevice;
        auto compiled = mlir::tile::compileToPtx(module, options);
        if (mlir::failed(compiled))
          return mlir::failure();
        for (auto &[name, text] : *compiled)
          os << "// gpu.module @" << name << "\n" << text;
        return mlir::success();
      },
      [](mlir::DialectRegistry &registry) {
        mlir::tile::registerTileDialects(registry);
        mlir::tile::registerGpuTargets(registry);
      });
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "Tile translation driver\n"));
}
