//===- TileToGPU.cpp - the convert-tile-to-gpu pass ----------------------===//
//
// Analyzes each kernel (KernelModel.cpp) and emits its GPU kernels
// (KernelEmitter.cpp) into one gpu.module. The tile functions stay: they
// document the kernels and describe their shapes for the manifest.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "tile/Conversion/Passes.h"
#include "tile/Dialect/Tile/IR/KernelSchedule.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"

namespace mlir::tile {
#define GEN_PASS_DEF_CONVERTTILETOGPUPASS
#include "tile/Conversion/Passes.h.inc"
} // namespace mlir::tile

using namespace mlir;
using namespace mlir::tile;

namespace {
struct ConvertTileToGPUPass final
    : mlir::tile::impl::ConvertTileToGPUPassBase<ConvertTileToGPUPass> {
  using ConvertTileToGPUPassBase::ConvertTileToGPUPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(TileDialect::getKernelAttrName()))
        kernels.push_back(func);
    if (kernels.empty()) {
      warnNoKernels(module, getArgument());
      return;
    }
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(&getContext()));
    OpBuilder builder(&getContext());
    builder.setInsertionPointToEnd(module.getBody());
    auto gpuModule =
        gpu::GPUModuleOp::create(builder, module.getLoc(), "tile_kernels");
    // The kernels as given: the rewrites the lowering wants ran before it
    // (tile-approximate-shifted-exponentials, tile-row-reciprocals, in
    // tile-lower-to-ptx), each analyzed once.
    for (func::FuncOp kernel : kernels) {
      FailureOr<gpu_lowering::KernelModel> model =
          gpu_lowering::KernelModel::analyze(kernel);
      KernelSchedule schedule = getSchedule(kernel);
      if (failed(model) ||
          failed(gpu_lowering::emitKernels(*model, schedule, gpuModule)))
        return signalPassFailure();
    }
    // Multiplies and adds may contract into FMAs, as nvcc's default
    // (-fmad=true) lets them: without the flag, LLVM writes `mul.rn` and
    // `add.rn`, which ptxas must not fuse (RMSNorm's sum of squares took
    // an FMUL and an FADD a lane). A fused multiply-add rounds once, so it
    // is at least as accurate; the order of the sums does not change.
    auto contract = arith::FastMathFlags::contract;
    gpuModule.walk([&](Operation *op) {
      if (!isa<arith::AddFOp, arith::SubFOp, arith::MulFOp>(op))
        return;
      auto fastMath = cast<arith::ArithFastMathInterface>(op);
      arith::FastMathFlags flags =
          fastMath.getFastMathFlagsAttr().getValue() | contract;
      op->setAttr(fastMath.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(op->getContext(), flags));
    });
  }
};
} // namespace
