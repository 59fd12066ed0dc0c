//===- KernelSignature.h - kernels' interfaces as JSON ----------*- C++ -*-===//
//
// The first piece of the kernel manifest: for every `tile.kernel` function,
// its arguments and results (kind, element type, rank, static sizes) and
// which arguments are differentiable. The lowering adds launch rules.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TARGET_KERNELSIGNATURE_H
#define TILE_TARGET_KERNELSIGNATURE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tile {
/// Writes `{"kernels": [...]}` for the kernels of `module`. Fails, with a
/// diagnostic, when the module holds no kernel.
LogicalResult writeKernelSignatures(ModuleOp module, llvm::raw_ostream &os);
} // namespace mlir::tile

#endif // TILE_TARGET_KERNELSIGNATURE_H
