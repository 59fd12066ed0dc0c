//===- SpecializePasses.cpp - the JIT's specializations as passes --------===//
//
// tile-specialize-storage and tile-specialize-widths: what the JIT does to a
// kernel source before it lowers it, as passes, so that `tile-opt` runs the
// JIT's whole pipeline (Jit prints its spelling when a compile fails).
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::tile {
#define GEN_PASS_DEF_TILESPECIALIZESTORAGEPASS
#define GEN_PASS_DEF_TILESPECIALIZEWIDTHSPASS
#include "tile/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace mlir::tile

using namespace mlir;
using namespace mlir::tile;

namespace {
struct TileSpecializeStoragePass final
    : mlir::tile::impl::TileSpecializeStoragePassBase<
          TileSpecializeStoragePass> {
  using TileSpecializeStoragePassBase::TileSpecializeStoragePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();
    Type target = llvm::StringSwitch<Type>(dtype)
                      .Case("bf16", BFloat16Type::get(context))
                      .Case("f16", Float16Type::get(context))
                      .Case("f32", Float32Type::get(context))
                      .Default(Type());
    if (!target) {
      module.emitError("unknown dtype '") << dtype << "' (bf16, f16 or f32)";
      return signalPassFailure();
    }
    auto convert = [&](Type type) -> Type {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (tensor &&
          (tensor.getElementType().isBF16() || tensor.getElementType().isF16()))
        return tensor.clone(target);
      return type;
    };
    module.walk([&](Operation *op) {
      for (Value result : op->getResults())
        result.setType(convert(result.getType()));
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            arg.setType(convert(arg.getType()));
      if (auto func = dyn_cast<func::FuncOp>(op)) {
        SmallVector<Type> inputs, results;
        for (Type type : func.getArgumentTypes())
          inputs.push_back(convert(type));
        for (Type type : func.getResultTypes())
          results.push_back(convert(type));
        func.setFunctionType(FunctionType::get(context, inputs, results));
      }
    });
  }
};

struct TileSpecializeWidthsPass final
    : mlir::tile::impl::TileSpecializeWidthsPassBase<TileSpecializeWidthsPass> {
  using TileSpecializeWidthsPassBase::TileSpecializeWidthsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<unsigned, int64_t>> pairs;
    for (StringRef entry : widths) {
      auto [index, width] = entry.split(':');
      unsigned argument = 0;
      int64_t value = 0;
      if (index.getAsInteger(10, argument) || width.getAsInteger(10, value) ||
          value < 0) {
        module.emitError("tile-specialize-widths: '")
            << entry << "' is not argument:width (e.g. 0:4096)";
        return signalPassFailure();
      }
      pairs.push_back({argument, value});
    }
    Builder b(module.getContext());
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func->hasAttr(TileDialect::getKernelAttrName()))
        continue;
      SmallVector<NamedAttribute> entries;
      for (auto [index, width] : pairs)
        if (index < func.getNumArguments() &&
            isa<RankedTensorType>(func.getArgument(index).getType()))
          entries.push_back(b.getNamedAttr("w" + std::to_string(index),
                                           b.getI64IntegerAttr(width)));
      func->setAttr(TileDialect::getSpecializeAttrName(),
                    b.getDictionaryAttr(entries));
    }
  }
};
} // namespace
