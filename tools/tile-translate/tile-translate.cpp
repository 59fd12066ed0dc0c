//===- tile-translate.cpp - translations out of tile IR ------------------===//
//
// Translations from tile IR to what a runtime consumes. Today: the kernel
// signatures (--tile-kernel-signature). The PTX and the full kernel manifest
// come with the lowering.
//
//===----------------------------------------------------------------------===//

#include "tile/InitTile.h"
#include "tile/Target/KernelSignature.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

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
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "Tile translation driver\n"));
}
