//===- KernelVerifier.h - what a tile.kernel function may contain -*- C++
//-*-===//

#ifndef TILE_DIALECT_TILE_IR_KERNELVERIFIER_H
#define TILE_DIALECT_TILE_IR_KERNELVERIFIER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tile {
/// Checks the rules a kernel obeys beyond its ops' own verifiers: supported
/// argument and result types, a single block of supported ops, and all
/// arithmetic in f32.
LogicalResult verifyKernel(func::FuncOp func);
} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_IR_KERNELVERIFIER_H
