//===- Passes.td - conversions out of the tile dialect -----*- tablegen -*-===//

#ifndef TILE_CONVERSION_PASSES_TD
#define TILE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTileToGPUPass : Pass<"convert-tile-to-gpu", "::mlir::ModuleOp"> {
  let summary = "lowers tile kernels to gpu.func kernels over flat buffers";
  let description = [{
    For every `tile.kernel` function `@f`, adds to `gpu.module @tile_kernels`
    a row kernel `@f` and, when `@f` returns a per-column value (a cross-row
    reduction such as RMSNorm's dW), a finalize kernel `@f_finalize`.

    The row kernel walks rows `blockIdx.x, blockIdx.x + gridDim.x, ...`;
    within a row the CTA's threads stride over the columns, any width, with
    the tail masked by the loop bound. Row reductions use warp shuffles and
    shared memory. Per-row values are computed once per row; element values
    are computed where they are stored, so nothing but the inputs and
    outputs touches memory. A cross-row reduction accumulates each CTA's rows
    into that CTA's own row of an fp32 workspace (no atomics); the finalize
    kernel sums the rows in CTA order, so the result is deterministic.

    Both kernels take the same parameters (see KernelEmitter.h): buffers as
    single pointers (bare-pointer convention, flat memrefs), then the row
    count, argument widths, the row kernel's CTA count and the workspace.

    Threads per CTA come from each kernel's `tile.schedule` (tile-schedule),
    or its default when the attribute is absent.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::memref::MemRefDialect", "::mlir::vector::VectorDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect", "::mlir::NVVM::NVVMDialect"
  ];
}

#endif // TILE_CONVERSION_PASSES_TD
