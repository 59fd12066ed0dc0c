//===- RewritePasses.cpp - the kernel rewrites before the lowering -------===//
//
// tile-approximate-shifted-exponentials and tile-row-reciprocals: two
// rewrites of a kernel's arithmetic that the GPU lowering wants, as passes
// of their own, so that each is seen (and tested) before and after, and the
// lowering converts the kernel it is given.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/Transforms/Passes.h"
#include "tile/Dialect/Tile/Transforms/RowReciprocals.h"
#include "tile/Dialect/Tile/Transforms/ShiftedExponentials.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tile {
#define GEN_PASS_DEF_TILEAPPROXIMATESHIFTEDEXPONENTIALSPASS
#define GEN_PASS_DEF_TILEROWRECIPROCALSPASS
#include "tile/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace mlir::tile

using namespace mlir;
using namespace mlir::tile;

namespace {
/// Calls `rewrite` on every tile.kernel function of `module` (each rewrite
/// changes a function's body only).
template <typename Rewrite>
void forEachKernel(ModuleOp module, Rewrite rewrite) {
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(TileDialect::getKernelAttrName()))
      rewrite(func);
}

struct TileApproximateShiftedExponentialsPass final
    : mlir::tile::impl::TileApproximateShiftedExponentialsPassBase<
          TileApproximateShiftedExponentialsPass> {
  void runOnOperation() override {
    forEachKernel(getOperation(), approximateShiftedExponentials);
  }
};

struct TileRowReciprocalsPass final
    : mlir::tile::impl::TileRowReciprocalsPassBase<TileRowReciprocalsPass> {
  using TileRowReciprocalsPassBase::TileRowReciprocalsPassBase;

  void runOnOperation() override {
    forEachKernel(getOperation(), [&](func::FuncOp kernel) {
      (void)multiplyByRowReciprocals(kernel, maxOps);
    });
  }
};
} // namespace
