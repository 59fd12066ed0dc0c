//===- KernelSignature.cpp - kernels' interfaces as JSON -----------------===//

#include "tile/Target/KernelSignature.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileDialect.h"

#include "llvm/Support/JSON.h"

using namespace mlir;

namespace {
llvm::json::Object describe(Type type) {
  llvm::json::Object object;
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    tensor.getElementType().print(os);
    llvm::json::Array shape;
    for (int64_t size : tensor.getShape())
      shape.push_back(ShapedType::isDynamic(size) ? llvm::json::Value(nullptr)
                                                  : llvm::json::Value(size));
    object["kind"] = "tensor";
    object["dtype"] = text;
    object["shape"] = std::move(shape);
  } else {
    type.print(os);
    object["kind"] = "scalar";
    object["dtype"] = text;
  }
  return object;
}
} // namespace

LogicalResult mlir::tile::writeKernelSignatures(ModuleOp module,
                                                llvm::raw_ostream &os) {
  llvm::json::Array kernels;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr(TileDialect::getKernelAttrName()))
      continue;
    llvm::json::Array args;
    for (unsigned index = 0; index < func.getNumArguments(); ++index) {
      llvm::json::Object arg = describe(func.getArgument(index).getType());
      arg["differentiable"] = tile::isDifferentiableArgument(func, index);
      args.push_back(std::move(arg));
    }
    llvm::json::Array results;
    for (Type type : func.getResultTypes())
      results.push_back(describe(type));
    kernels.push_back(llvm::json::Object{{"name", func.getSymName()},
                                         {"args", std::move(args)},
                                         {"results", std::move(results)}});
  }
  if (kernels.empty())
    return module.emitError("no function carries 'tile.kernel'");
  os << llvm::formatv("{0:2}\n", llvm::json::Value(llvm::json::Object{
                                     {"kernels", std::move(kernels)}}));
  return success();
}
