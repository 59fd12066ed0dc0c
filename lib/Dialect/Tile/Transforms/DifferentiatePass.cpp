//===- DifferentiatePass.cpp - the tile-differentiate pass ---------------===//
//
// Chooses the kernels and forwards the options; the work is in
// Differentiate.cpp.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/Transforms/Passes.h"

#include "tile/Dialect/Tile/IR/TileOps.h"

namespace mlir::tile {
#define GEN_PASS_DEF_TILEDIFFERENTIATEPASS
#include "tile/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace mlir::tile

using namespace mlir;
using namespace mlir::tile;

namespace {
struct TileDifferentiatePass final
    : mlir::tile::impl::TileDifferentiatePassBase<TileDifferentiatePass> {
  using TileDifferentiatePassBase::TileDifferentiatePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    if (functions.empty()) {
      // Derived functions are kernels too; differentiating them again is
      // not what a plain run asks for.
      for (auto func : module.getOps<func::FuncOp>())
        if (func->hasAttr(TileDialect::getKernelAttrName()) &&
            !func->hasAttr(TileDialect::getBackwardOfAttrName()) &&
            !func->hasAttr(TileDialect::getForwardOfAttrName()))
          kernels.push_back(func);
      if (kernels.empty())
        warnNoKernels(module, getArgument());
    } else {
      for (const std::string &name : functions) {
        auto func = module.lookupSymbol<func::FuncOp>(name);
        if (!func) {
          emitError(module.getLoc(), "tile-differentiate: no function @")
              << name;
          return signalPassFailure();
        }
        kernels.push_back(func);
      }
    }
    DifferentiateOptions options;
    options.policy = policy;
    options.mainGrad = mainGrad;
    options.rowWidthHint = rowWidthHint;
    options.returnPrimal = returnPrimal;
    for (func::FuncOp kernel : kernels) {
      if (isDerived(module, kernel))
        continue;
      if (failed(differentiateKernel(kernel, options)))
        return signalPassFailure();
    }
  }

  /// Whether an earlier run already derived `kernel`'s backward: running the
  /// pass twice is harmless.
  static bool isDerived(ModuleOp module, func::FuncOp kernel) {
    auto backward =
        module.lookupSymbol<func::FuncOp>((kernel.getSymName() + "_bwd").str());
    auto of = backward ? backward->getAttrOfType<FlatSymbolRefAttr>(
                             TileDialect::getBackwardOfAttrName())
                       : FlatSymbolRefAttr();
    return of && of.getValue() == kernel.getSymName();
  }
};
} // namespace
