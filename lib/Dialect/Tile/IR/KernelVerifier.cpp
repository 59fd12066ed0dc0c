//===- KernelVerifier.cpp - what a tile.kernel function may contain ------===//
//
// A kernel is lowered to a GPU kernel and differentiated, so it is held to a
// narrower language than a plain func.func: tensors of storage types at the
// boundary, one block of tile/arith/math ops, and all arithmetic in f32 (the
// GPU computes in f32 whatever the storage type; making the casts explicit
// keeps rounding visible to the evaluator and the differentiator).
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::tile;

namespace {
bool isScalarParameter(Type type) {
  return type.isF32() || type.isIndex() || type.isInteger(32) ||
         type.isInteger(64);
}

bool isStorageTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isStorageFloat(tensor.getElementType());
}

/// Integer data (labels): an argument only, read through tile.cast.
bool isIntegerTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && (tensor.getElementType().isInteger(32) ||
                    tensor.getElementType().isInteger(64));
}

/// Whether `user` reads `value` only through tile.cast, or only for its
/// shape (a 'like' operand, tensor.dim): canonicalization points 'like'
/// operands at any value of the same shape, an integer argument included.
bool readsAsFloatOrShape(Operation *user, Value value) {
  if (isa<CastOp, IotaOp, tensor::DimOp>(user))
    return true;
  if (auto splat = dyn_cast<SplatOp>(user))
    return splat.getValue() != value;
  if (auto broadcast = dyn_cast<BroadcastOp>(user))
    return broadcast.getInput() != value;
  if (auto pad = dyn_cast<PadOp>(user))
    return pad.getInput() != value;
  if (auto repeat = dyn_cast<RepeatOp>(user))
    return repeat.getInput() != value;
  return false;
}

/// Ops that only move or convert data; they may carry storage types.
bool isDataMovement(Operation *op) {
  return isa<CastOp, SplatOp, BroadcastOp, SliceOp, ConcatOp, PadOp, RepeatOp,
             SwapHalvesOp>(op);
}

/// Element (or scalar) types an arithmetic op may produce inside a kernel.
bool isComputeType(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (isa<TensorType>(type))
    return element.isF32() || element.isInteger(1);
  return element.isF32() || element.isIndex() || element.isInteger(1) ||
         element.isInteger(32) || element.isInteger(64);
}
} // namespace

bool mlir::tile::hasFunctionHeader(func::FuncOp func) {
  return func->getNumRegions() == 1 && func.getFunctionTypeAttr() &&
         func.getSymNameAttr();
}

LogicalResult mlir::tile::verifyFunctionBody(func::FuncOp func,
                                             StringRef attribute) {
  // MLIR runs a dialect's attribute verifiers before the op's own verifier
  // and its regions': nothing func.func checks of its body may be assumed
  // here. A function without its name or type is the one thing left to
  // func.func's verifier, which reports it; every rule below reads both.
  if (!hasFunctionHeader(func))
    return success();
  FunctionType type = func.getFunctionType();
  auto error = [&]() {
    return func.emitOpError("has '") << attribute << "' but ";
  };
  Region &body = func.getBody();
  if (body.empty())
    return error() << "no body (a declaration)";
  if (!body.hasOneBlock())
    return error() << "a body of " << body.getBlocks().size()
                   << " blocks; it must be a single block";
  Block &entry = body.front();
  if (entry.getNumArguments() != type.getNumInputs())
    return error() << "its block has " << entry.getNumArguments()
                   << " arguments where its signature has "
                   << type.getNumInputs();
  for (auto [index, argument, expected] :
       llvm::enumerate(entry.getArguments(), type.getInputs()))
    if (argument.getType() != expected)
      return emitError(argument.getLoc())
             << "block argument #" << index << " of @" << func.getSymName()
             << " has type " << argument.getType()
             << " where its signature has " << expected;
  auto returnOp =
      entry.empty() ? func::ReturnOp() : dyn_cast<func::ReturnOp>(entry.back());
  if (!returnOp)
    return error() << "its block does not end in func.return";
  if (returnOp.getOperandTypes() != type.getResults())
    return returnOp.emitOpError("returns (")
           << returnOp.getOperandTypes() << ") where the signature of @"
           << func.getSymName() << " has (" << type.getResults() << ")";
  return success();
}

LogicalResult mlir::tile::verifyKernel(func::FuncOp func) {
  if (failed(verifyFunctionBody(func, TileDialect::getKernelAttrName())))
    return failure();
  if (!hasFunctionHeader(func))
    return success();
  // The name becomes the GPU kernel's (and its derived kernels', with
  // suffixes) in PTX, whose identifiers are [a-zA-Z][a-zA-Z0-9_$]* or
  // [_$][a-zA-Z0-9_$]+; LLVM's NVPTX back end aborts on any other (found by
  // the structural mutator: a name with spaces).
  StringRef name = func.getSymName();
  bool identifier =
      !name.empty() &&
      (llvm::isAlpha(name.front()) ||
       ((name.front() == '_' || name.front() == '$') && name.size() > 1)) &&
      llvm::all_of(name, [](char c) {
        return llvm::isAlnum(c) || c == '_' || c == '$';
      });
  if (!identifier)
    return func.emitOpError("kernel name '")
           << name
           << "' is not an identifier: kernels are named with letters, "
              "digits, '_' and '$', starting with a letter, or with '_' or "
              "'$' and more (the name is the GPU kernel's in PTX)";
  FunctionType type = func.getFunctionType();
  for (auto [index, argType] : llvm::enumerate(type.getInputs())) {
    if (!isStorageTensor(argType) && !isIntegerTensor(argType) &&
        !isScalarParameter(argType))
      return func.emitOpError("kernel argument #")
             << index << " has unsupported type " << argType
             << "; kernels take ranked tensors of bf16, f16, f32 (or i32 and "
                "i64 data such as labels) and scalar f32, index, i32 or i64 "
                "parameters";
    if (!isIntegerTensor(argType))
      continue;
    // Integer data enters the float math through one conversion, so that
    // every other op, rule and emitter sees floats only.
    for (Operation *user : func.getArgument(index).getUsers())
      if (!readsAsFloatOrShape(user, func.getArgument(index)))
        return user->emitOpError("reads the integer tensor argument #")
               << index << " (" << argType
               << "); integer tensors are read through tile.cast to a float "
                  "type (tile.cast %labels : tensor<?xi64> to "
                  "tensor<?xf32>)";
  }
  if (type.getNumResults() == 0)
    return func.emitOpError("kernel must return at least one tensor");
  for (auto [index, resultType] : llvm::enumerate(type.getResults())) {
    if (!isStorageTensor(resultType))
      return func.emitOpError("kernel result #")
             << index << " has unsupported type " << resultType
             << "; kernels return ranked tensors of bf16, f16 or f32";
  }
  // The GPU lowering maps a kernel's leading dimension to rows; a batch of
  // sequences is the caller's to flatten, as tile.Kernel does for
  // [..., N] tensors. Said here rather than at lowering time, so that a
  // kernel the evaluator accepts also lowers.
  auto checkRank = [&](Type type, Location loc,
                       const Twine &what) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() <= 2)
      return success();
    return emitError(loc) << what << " has rank " << tensor.getRank() << " ("
                          << type
                          << "); kernels work on [rows, width] tensors and "
                             "rank-1 vectors: flatten the leading dimensions "
                             "into rows before the call (tile.Kernel in "
                             "Python does so for [..., N] tensors)";
  };
  for (auto [index, argType] : llvm::enumerate(type.getInputs()))
    if (failed(checkRank(argType, func.getArgument(index).getLoc(),
                         "kernel argument #" + Twine(index))))
      return failure();
  for (auto [index, resultType] : llvm::enumerate(type.getResults()))
    if (failed(checkRank(resultType, func.getLoc(),
                         "kernel result #" + Twine(index))))
      return failure();

  for (Operation &op : func.getBody().front()) {
    if (!isKernelOp(&op))
      return op.emitOpError("is not supported in a tile kernel; a kernel "
                            "holds tile ops, tensor.dim and these: ")
             << supportedKernelOps() << " (docs/Dialect.md)";
    for (Type resultType : op.getResultTypes())
      if (failed(checkRank(resultType, op.getLoc(),
                           "'" + op.getName().getStringRef() + "' result")))
        return failure();
    if (isDataMovement(&op))
      continue;
    for (Type resultType : op.getResultTypes()) {
      if (!isComputeType(resultType))
        return op.emitOpError("computes in ")
               << resultType
               << "; tile kernels compute in f32 (convert with tile.cast)";
    }
  }
  return success();
}

// KernelOps.def is the list: an op the evaluator or the GPU lowering cannot
// handle is rejected here rather than failing deep inside the PTX pipeline
// (math.trunc, math.atan).
bool mlir::tile::isKernelOp(Operation *op) {
  if (op->getDialect() && op->getDialect()->getNamespace() == "tile")
    return true;
  if (isa<tensor::DimOp, func::ReturnOp>(op))
    return true;
#define TILE_KERNEL_OP(QualifiedName)                                          \
  if (isa<QualifiedName>(op))                                                  \
    return true;
#include "tile/Dialect/Tile/IR/KernelOps.def"
  return false;
}

std::string mlir::tile::supportedKernelOps() {
  std::string names;
#define TILE_KERNEL_OP(QualifiedName)                                          \
  names +=                                                                     \
      (names.empty() ? "" : ", ") + QualifiedName::getOperationName().str();
#include "tile/Dialect/Tile/IR/KernelOps.def"
  return names;
}

bool mlir::tile::isDifferentiableArgument(func::FuncOp func, unsigned index) {
  return isa<FloatType>(getElementTypeOrSelf(func.getArgument(index))) &&
         !func.getArgAttr(index, TileDialect::getNoGradAttrName());
}

bool mlir::tile::readsOnlyShape(OpOperand &use) {
  Operation *op = use.getOwner();
  unsigned number = use.getOperandNumber();
  if (auto splat = dyn_cast<SplatOp>(op))
    return number == splat.getShapeMutable().getOperandNumber();
  if (auto broadcast = dyn_cast<BroadcastOp>(op))
    return number == broadcast.getShapeMutable().getOperandNumber();
  if (auto iota = dyn_cast<IotaOp>(op))
    return number == iota.getShapeMutable().getOperandNumber();
  if (auto pad = dyn_cast<PadOp>(op))
    return number == pad.getShapeMutable().getOperandNumber();
  if (auto repeat = dyn_cast<RepeatOp>(op))
    return number == repeat.getShapeMutable().getOperandNumber();
  return isa<tensor::DimOp>(op);
}

bool mlir::tile::readsArgumentData(func::FuncOp func, unsigned index) {
  return llvm::any_of(func.getArgument(index).getUses(),
                      [](OpOperand &use) { return !readsOnlyShape(use); });
}

LogicalResult mlir::tile::verifyIsKernel(func::FuncOp func, StringRef tool) {
  if (func->hasAttr(TileDialect::getKernelAttrName()) && !func.isExternal())
    return success();
  return func.emitError("@")
         << func.getSymName() << " is "
         << (func.isExternal() ? "a declaration (no body)"
                               : "not a tile.kernel")
         << "; " << tool
         << " takes kernels only (func.func with a body and "
            "`attributes {tile.kernel}`)";
}

LogicalResult mlir::tile::verifyOnlyKernels(ModuleOp module, StringRef tool) {
  WalkResult walk = module.walk([&](func::FuncOp func) {
    return failed(verifyIsKernel(func, tool)) ? WalkResult::interrupt()
                                              : WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

void mlir::tile::warnNoKernels(ModuleOp module, StringRef pass) {
  bool any = false;
  module.walk([&](func::FuncOp func) {
    any |= func->hasAttr(TileDialect::getKernelAttrName());
  });
  if (any)
    return;
  Block *body = module.getBody();
  Location loc = body->empty() ? module.getLoc() : body->front().getLoc();
  emitWarning(loc) << pass
                   << ": no function has the `tile.kernel` attribute, so "
                      "there is nothing to do (a kernel is a func.func with "
                      "`attributes {tile.kernel}`; docs/Dialect.md)";
}
