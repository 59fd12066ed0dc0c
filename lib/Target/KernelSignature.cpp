//===- KernelSignature.cpp - kernels' interfaces as JSON -----------------===//

#include "tile/Target/KernelSignature.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileDialect.h"

#include "llvm/Support/JSON.h"

using namespace mlir;
using mlir::tile::kValueRoles;
using mlir::tile::ValueRole;
using mlir::tile::ValueRoleInfo;

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

/// The role tile-differentiate gave an argument or result (ValueRoles.h),
/// with the index it refers to; `plain` where it gave none.
void describeRole(DictionaryAttr attrs, ValueRole plain,
                  llvm::json::Object &object) {
  for (const ValueRoleInfo &info : kValueRoles) {
    if (info.attribute.empty())
      continue;
    if (auto index =
            attrs ? dyn_cast_or_null<IntegerAttr>(attrs.get(info.attribute))
                  : IntegerAttr()) {
      object["role"] = info.name;
      object["of"] = index.getInt();
      return;
    }
  }
  object["role"] = kValueRoles[static_cast<int>(plain)].name;
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
      // "data": the body reads the elements; "shape": only the shape;
      // "none": nothing. For the last two a caller may pass a stand-in of
      // the shape and dtype (Python keeps no tensor for it).
      arg["uses"] = tile::readsArgumentData(func, index)  ? "data"
                    : func.getArgument(index).use_empty() ? "none"
                                                          : "shape";
      describeRole(func.getArgAttrDict(index), ValueRole::Input, arg);
      args.push_back(std::move(arg));
    }
    llvm::json::Array results;
    for (auto [index, type] : llvm::enumerate(func.getResultTypes())) {
      llvm::json::Object result = describe(type);
      describeRole(func.getResultAttrDict(index), ValueRole::Output, result);
      results.push_back(std::move(result));
    }
    llvm::json::Object kernel{{"name", func.getSymName()},
                              {"args", std::move(args)},
                              {"results", std::move(results)}};
    for (StringRef attr : {TileDialect::getBackwardOfAttrName(),
                           TileDialect::getForwardOfAttrName()})
      if (auto of = func->getAttrOfType<FlatSymbolRefAttr>(attr))
        kernel[attr.drop_front(strlen("tile."))] = of.getValue();
    kernels.push_back(std::move(kernel));
  }
  if (kernels.empty())
    return module.emitError("no function carries 'tile.kernel'");
  os << llvm::formatv("{0:2}\n", llvm::json::Value(llvm::json::Object{
                                     {"kernels", std::move(kernels)}}));
  return success();
}
