//===- evaluate.cpp - fuzz the float64 reference evaluator ----------------===//
//
// Every function of a verified module evaluated on seeded inputs at a few
// small shapes (the evaluator is the reference every GPU result is checked
// against: it must give a result or an error on anything that verifies).
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "tile/Interp/Evaluator.h"
#include "tile/Interp/Inputs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

static void evaluate(const uint8_t *data, size_t size) {
  mlir::OwningOpRef<mlir::ModuleOp> module = ::tile::fuzz::parse(data, size);
  if (!module)
    return;
  llvm::SmallVector<mlir::func::FuncOp> functions;
  module->walk([&](mlir::func::FuncOp func) {
    if (!func.isDeclaration())
      functions.push_back(func);
  });
  for (mlir::func::FuncOp func : functions) {
    for (const char *shape : {"3x5", "1x1", "2x8"}) {
      std::vector<std::string> specs(func.getNumArguments(), shape);
      auto inputs = ::tile::interp::makeInputs(func, specs, {});
      if (!inputs) {
        llvm::consumeError(inputs.takeError());
        continue;
      }
      for (bool round : {true, false}) {
        ::tile::interp::EvalOptions options;
        options.roundStorage = round;
        // About a second under ASan (the default is ~20 s of a release
        // build, over libFuzzer's -timeout here).
        options.maxElementOps = int64_t(1) << 24;
        auto results = ::tile::interp::evaluate(func, *inputs, options);
        if (!results)
          ::tile::fuzz::checkLocated(results.takeError());
      }
    }
  }
}

TILE_FUZZ_HARNESS(evaluate)
