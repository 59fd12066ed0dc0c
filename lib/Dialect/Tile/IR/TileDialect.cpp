//===- TileDialect.cpp - tile dialect registration and attributes --------===//
//
// Registers the ops, and verifies the discardable attributes the dialect
// owns: `tile.kernel` (delegated to KernelVerifier.cpp), the argument marker
// `tile.nograd`, the per-op recompute policy, and the roles tile-differentiate
// writes on derived functions.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/IR/KernelSchedule.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tile;

#include "tile/Dialect/Tile/IR/TileOpsDialect.cpp.inc"

#include "tile/Dialect/Tile/IR/TileEnums.cpp.inc"

#include "tile/Dialect/Tile/IR/TileInterfaces.cpp.inc"

void TileDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tile/Dialect/Tile/IR/TileOps.cpp.inc"
      >();
}

namespace {
LogicalResult verifyIndexAttr(Operation *op, NamedAttribute attr,
                              StringRef where) {
  auto index = dyn_cast<IntegerAttr>(attr.getValue());
  if (!index || index.getInt() < 0)
    return op->emitError("'") << attr.getName().getValue() << "' on " << where
                              << " must be a non-negative integer index";
  return success();
}

/// A backward's role indices name values of the kernel it was derived
/// from: a cotangent or primal one of its results, a main_grad or gradient
/// one of its arguments. Checked where the forward is in the module (a
/// function missing its header is left to func.func's verifier).
LogicalResult verifyRoleIndices(func::FuncOp backward, FlatSymbolRefAttr of) {
  auto forward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      backward.getOperation(), of);
  if (!forward || !hasFunctionHeader(forward) || !hasFunctionHeader(backward))
    return success();
  int64_t results = forward.getNumResults();
  int64_t arguments = forward.getNumArguments();
  // Read through the raw attribute arrays: this runs before func.func's
  // own verifier, so they may be shorter than the signature or hold
  // something other than dictionaries (getArgAttrDict would read past
  // them).
  auto check = [&](ArrayAttr all, unsigned i, StringRef where, StringRef role,
                   int64_t count, StringRef what) -> LogicalResult {
    auto attrs = all && i < all.size() ? dyn_cast<DictionaryAttr>(all[i])
                                       : DictionaryAttr();
    auto index =
        attrs ? dyn_cast_or_null<IntegerAttr>(attrs.get(role)) : IntegerAttr();
    if (!index || index.getInt() < count)
      return success();
    return backward.emitError()
           << where << " #" << i << "'s '" << role << "' = " << index.getInt()
           << " names " << what << " #" << index.getInt() << " of @"
           << forward.getSymName() << ", which has " << count << " " << what
           << (count == 1 ? "" : "s");
  };
  ArrayAttr argAttrs = backward.getArgAttrsAttr();
  for (unsigned i = 0; i < backward.getNumArguments(); ++i)
    if (failed(check(argAttrs, i, "argument",
                     TileDialect::getCotangentAttrName(), results, "result")) ||
        failed(check(argAttrs, i, "argument",
                     TileDialect::getMainGradAttrName(), arguments,
                     "argument")) ||
        failed(check(argAttrs, i, "argument",
                     TileDialect::getForwardResultAttrName(), results,
                     "result")))
      return failure();
  ArrayAttr resAttrs = backward.getResAttrsAttr();
  for (unsigned i = 0; i < backward.getNumResults(); ++i)
    if (failed(check(resAttrs, i, "result", TileDialect::getGradientAttrName(),
                     arguments, "argument")) ||
        failed(check(resAttrs, i, "result", TileDialect::getPrimalAttrName(),
                     results, "result")))
      return failure();
  return success();
}

/// `tile.save` / `tile.recompute` choose the policy for one op's result.
LogicalResult verifyPolicyAttr(Operation *op, NamedAttribute attr) {
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError("'")
           << attr.getName().getValue() << "' must be a unit attribute";
  auto type = op->getNumResults() == 1
                  ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                  : RankedTensorType();
  if (!type || !type.getElementType().isF32())
    return op->emitError("'")
           << attr.getName().getValue()
           << "' applies to an op with one f32 tensor result";
  if (op->hasAttr(TileDialect::getSaveAttrName()) &&
      op->hasAttr(TileDialect::getRecomputeAttrName()))
    return op->emitError("an op cannot be both 'tile.save' and "
                         "'tile.recompute'");
  return success();
}
} // namespace

LogicalResult TileDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  // The rules below read the function's name and type; a generic-form
  // func.func without them is reported by func.func's own verifier, which
  // runs after the attribute verifiers.
  if (auto func = dyn_cast<func::FuncOp>(op); func && !hasFunctionHeader(func))
    return success();
  if (name == getKernelAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("'tile.kernel' must be a unit attribute");
    auto func = dyn_cast<func::FuncOp>(op);
    if (!func)
      return op->emitError("'tile.kernel' applies to func.func, not '")
             << op->getName() << "'";
    return verifyKernel(func);
  }
  if (name == "tile.schedule")
    return verifySchedule(op, attr.getValue());
  if (name == getSpecializeAttrName()) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    auto func = dyn_cast<func::FuncOp>(op);
    if (!dict || !func)
      return op->emitError("'tile.specialize' must be a dictionary on a "
                           "func.func");
    for (NamedAttribute entry : dict) {
      StringRef key = entry.getName().getValue();
      unsigned index = 0;
      auto width = dyn_cast<IntegerAttr>(entry.getValue());
      if (!key.consume_front("w") || key.getAsInteger(10, index) ||
          index >= func.getNumArguments() ||
          !isa<RankedTensorType>(func.getArgumentTypes()[index]) || !width ||
          width.getInt() < 0)
        return op->emitError("'tile.specialize' entry '")
               << entry.getName().getValue()
               << "' must be w<i> = width, for tensor argument i";
    }
    return success();
  }
  if (name == getSaveAttrName() || name == getRecomputeAttrName())
    return verifyPolicyAttr(op, attr);
  if (name == getBackwardOfAttrName() || name == getForwardOfAttrName()) {
    if (!isa<func::FuncOp>(op) || !isa<FlatSymbolRefAttr>(attr.getValue()))
      return op->emitError("'")
             << name << "' must be a symbol reference on a func.func";
    // Derived functions are kernels; the roles mean nothing elsewhere.
    if (!op->hasAttr(getKernelAttrName()))
      return op->emitError("'") << name
                                << "' marks a derived kernel: the function "
                                   "must carry 'tile.kernel' too";
    if (name == getBackwardOfAttrName())
      return verifyRoleIndices(cast<func::FuncOp>(op),
                               cast<FlatSymbolRefAttr>(attr.getValue()));
    return success();
  }
  if (name == getNoGradAttrName())
    return op->emitError("'tile.nograd' marks a function argument; put it in "
                         "the argument's attribute dictionary");
  return op->emitError("unknown tile attribute '") << name << "'";
}

LogicalResult TileDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  std::string where = "argument #" + std::to_string(argIndex);
  if (name == getCotangentAttrName() || name == getSavedAttrName() ||
      name == getMainGradAttrName() || name == getForwardResultAttrName())
    return verifyIndexAttr(op, attr, where);
  if (name != getNoGradAttrName())
    return op->emitError("unknown tile argument attribute '")
           << name << "' on " << where;
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError("'tile.nograd' on ")
           << where << " must be a unit attribute";
  return success();
}

LogicalResult TileDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  std::string where = "result #" + std::to_string(resultIndex);
  if (name == getGradientAttrName() || name == getSavedAttrName() ||
      name == getPrimalAttrName())
    return verifyIndexAttr(op, attr, where);
  return op->emitError("unknown tile result attribute '")
         << name << "' on " << where;
}
