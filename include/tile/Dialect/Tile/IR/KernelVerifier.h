//===- KernelVerifier.h - what a tile.kernel function holds -----*- C++ -*-===//

#ifndef TILE_DIALECT_TILE_IR_KERNELVERIFIER_H
#define TILE_DIALECT_TILE_IR_KERNELVERIFIER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::tile {
/// The most ops one kernel may have for the GPU lowering (the examples and
/// their derived backward kernels have a few dozen): the lowering refuses a
/// larger kernel, and the rewrites before it never make one.
constexpr int64_t kMaxKernelOps = 4096;

/// Whether `func` has what every Tile rule reads: its one region, its
/// `function_type` and its `sym_name`. A generic-form func.func may lack
/// them; func.func's own verifier reports that after the attribute
/// verifiers have run, so they pass such a function without reading it.
bool hasFunctionHeader(func::FuncOp func);

/// Checks what every rule that reads a function's body relies on: one block
/// whose arguments have the signature's types, ending in a func.return of
/// the signature's result types. Attribute verifiers run before func.func's
/// own verifier, so each Tile attribute that reads the body (`attribute`,
/// named in the message) calls this first. A function without its header
/// passes (hasFunctionHeader).
LogicalResult verifyFunctionBody(func::FuncOp func, StringRef attribute);

/// Checks the rules a kernel obeys beyond its ops' own verifiers: a body
/// (verifyFunctionBody), supported argument and result types, supported
/// ops, and all arithmetic in f32.
LogicalResult verifyKernel(func::FuncOp func);

/// True if argument `index` of `func` gets a cotangent: a floating-point
/// tensor or scalar without `tile.nograd`. The one statement of this rule,
/// for the kernel signature and the differentiator alike.
bool isDifferentiableArgument(func::FuncOp func, unsigned index);

/// Whether `use` reads only its value's shape: a `like` operand, or
/// tensor.dim's source. The GPU lowering loads no data for it. The one
/// statement of this rule, for the recompute policy and the kernel
/// signature alike.
bool readsOnlyShape(OpOperand &use);

/// Whether `func`'s body reads the elements of argument `index`, not only
/// its shape (readsOnlyShape). A caller may pass anything of the right
/// shape and dtype for an argument that is not read: Python keeps no
/// tensor alive for a backward that does not read it.
bool readsArgumentData(func::FuncOp func, unsigned index);

/// Whether a kernel may contain `op`: a tile op, tensor.dim, the return, or
/// an upstream op of KernelOps.def (the one list the verifier, evaluator,
/// derivative rules and GPU lowering share).
bool isKernelOp(Operation *op);

/// The upstream ops of KernelOps.def by name ("arith.addf, ..."), for
/// messages and documentation.
std::string supportedKernelOps();

/// Checks that `func` (of a verified module) is a kernel with a body, as
/// the tools and the JIT require: otherwise an error at `func` naming it and
/// `tool`. Such a function was never held to the kernel rules.
LogicalResult verifyIsKernel(func::FuncOp func, StringRef tool);

/// verifyIsKernel for every func.func in `module` (nested modules
/// included), for the tools that compile a whole module: skipping a
/// function that is no kernel would hide a forgotten attribute.
LogicalResult verifyOnlyKernels(ModuleOp module, StringRef tool);

/// Warns, at the module's first op, that `pass` found no function with the
/// `tile.kernel` attribute to work on when that is so: a file without the
/// attribute would otherwise pass through unchanged and silently.
void warnNoKernels(ModuleOp module, StringRef pass);
} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_IR_KERNELVERIFIER_H
