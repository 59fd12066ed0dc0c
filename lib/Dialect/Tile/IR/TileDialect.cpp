//===- TileDialect.cpp - tile dialect registration and attributes --------===//
//
// Registers the ops, and verifies the two discardable
// attributes the dialect owns: `tile.kernel` (delegated to KernelVerifier.cpp)
// and the argument marker `tile.nograd`.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tile;

#include "tile/Dialect/Tile/IR/TileOpsDialect.cpp.inc"

#include "tile/Dialect/Tile/IR/TileEnums.cpp.inc"

void TileDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tile/Dialect/Tile/IR/TileOps.cpp.inc"
      >();
}

LogicalResult TileDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == getKernelAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("'tile.kernel' must be a unit attribute");
    auto func = dyn_cast<func::FuncOp>(op);
    if (!func)
      return op->emitError("'tile.kernel' applies to func.func, not '")
             << op->getName() << "'";
    return verifyKernel(func);
  }
  if (attr.getName() == getNoGradAttrName())
    return op->emitError("'tile.nograd' marks a function argument; put it in "
                         "the argument's attribute dictionary");
  return op->emitError("unknown tile attribute '")
         << attr.getName().getValue() << "'";
}

LogicalResult TileDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (attr.getName() != getNoGradAttrName())
    return op->emitError("unknown tile argument attribute '")
           << attr.getName().getValue() << "' on argument #" << argIndex;
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError("'tile.nograd' on argument #")
           << argIndex << " must be a unit attribute";
  return success();
}
