//===- differentiate.cpp - fuzz tile-differentiate -----------------------===//
//
// Every kernel of a verified module through tile-differentiate under both
// recompute policies, with and without main_grad; whatever the pass
// produces must verify (the compiler never emits IR it would reject).
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/Dialect/Tile/Transforms/ShiftedExponentials.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

static void differentiate(const uint8_t *data, size_t size) {
  for (unsigned variant = 0; variant < 3; ++variant) {
    mlir::OwningOpRef<mlir::ModuleOp> module = ::tile::fuzz::parse(data, size);
    if (!module)
      return;
    llvm::SmallVector<mlir::func::FuncOp> kernels;
    module->walk([&](mlir::func::FuncOp func) {
      if (func->hasAttr(mlir::tile::TileDialect::getKernelAttrName()))
        kernels.push_back(func);
    });
    mlir::tile::DifferentiateOptions options;
    options.policy = variant == 1 ? mlir::tile::RecomputePolicy::SaveRowStats
                                  : mlir::tile::RecomputePolicy::Recompute;
    options.mainGrad = variant == 2;
    // As the JIT: the approximable exponentials marked first, which the
    // backward clones.
    for (mlir::func::FuncOp kernel : kernels) {
      mlir::tile::approximateShiftedExponentials(kernel);
      (void)mlir::tile::differentiateKernel(kernel, options);
    }
    if (mlir::failed(mlir::verify(*module))) {
      llvm::errs() << "tile-differentiate produced IR that does not verify\n";
      std::abort();
    }
  }
}

TILE_FUZZ_HARNESS(differentiate)
