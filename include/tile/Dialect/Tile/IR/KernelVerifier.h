//===- KernelVerifier.h - what a tile.kernel function may contain -*- C++
//-*-===//

#ifndef TILE_DIALECT_TILE_IR_KERNELVERIFIER_H
#define TILE_DIALECT_TILE_IR_KERNELVERIFIER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::tile {
/// Checks the rules a kernel obeys beyond its ops' own verifiers: supported
/// argument and result types, a single block of supported ops, and all
/// arithmetic in f32.
LogicalResult verifyKernel(func::FuncOp func);

/// True if argument `index` of `func` gets a cotangent: a floating-point
/// tensor or scalar without `tile.nograd`. The one statement of this rule,
/// for the kernel signature and the differentiator alike.
bool isDifferentiableArgument(func::FuncOp func, unsigned index);

/// Whether a kernel may contain `op`: a tile op, tensor.dim, the return, or
/// an upstream op of KernelOps.def (the one list the verifier, evaluator,
/// derivative rules and GPU lowering share).
bool isKernelOp(Operation *op);

/// The upstream ops of KernelOps.def by name ("arith.addf, ..."), for
/// messages and documentation.
std::string supportedKernelOps();

/// Warns, at the module's first op, that `pass` found no function with the
/// `tile.kernel` attribute to work on when that is so: a file without the
/// attribute would otherwise pass through unchanged and silently.
void warnNoKernels(ModuleOp module, StringRef pass);
} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_IR_KERNELVERIFIER_H
