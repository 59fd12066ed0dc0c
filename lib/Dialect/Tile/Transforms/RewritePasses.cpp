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
/// Every tile.kernel function of `module`.
SmallVector<func::FuncOp> kernelsOf(ModuleOp module) {
  SmallVector<func::FuncOp> kernels;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(TileDialect::getKernelAttrName()))
      kernels.push_back(func);
  return kernels;
}

struct TileApproximateShiftedExponentialsPass final
    : mlir::tile::impl::TileApproximateShiftedExponentialsPassBase<
          TileApproximateShiftedExponentialsPass> {
  void runOnOperation() override {
    for (func::FuncOp kernel : kernelsOf(getOperation()))
      approximateShiftedExponentials(kernel);
  }
};

struct TileRowReciprocalsPass final
    : mlir::tile::impl::TileRowReciprocalsPassBase<TileRowReciprocalsPass> {
  using TileRowReciprocalsPassBase::TileRowReciprocalsPassBase;

  void runOnOperation() override {
    for (func::FuncOp kernel : kernelsOf(getOperation()))
      (void)multiplyByRowReciprocals(kernel, maxOps);
  }
};
} // namespace
