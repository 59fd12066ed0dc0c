//===- KernelFixture.h - a test fixture that loads tile kernels -*- C++ -*-===//
//
// Shared by the evaluator tests: an MLIRContext with the tile dialects,
// helpers that parse an example from examples/ or a kernel from a string,
// and seeded random tensors.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UNITTESTS_INTERP_KERNELFIXTURE_H
#define TILE_UNITTESTS_INTERP_KERNELFIXTURE_H

#include "tile/InitTile.h"
#include "tile/Interp/Inputs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <cmath>
#include <string>
#include <vector>

namespace tile::testing {

class KernelFixture : public ::testing::Test {
protected:
  KernelFixture() {
    mlir::DialectRegistry registry;
    mlir::tile::registerTileDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// The function @name of examples/name.mlir (null if it does not parse).
  mlir::func::FuncOp loadExample(const std::string &name) {
    std::string path = std::string(TILE_EXAMPLES_DIR) + "/" + name + ".mlir";
    return keep(mlir::parseSourceFile<mlir::ModuleOp>(path, &context), name);
  }

  /// The function @name of `source` (null if it does not parse).
  mlir::func::FuncOp parse(const std::string &source, const std::string &name) {
    return keep(mlir::parseSourceString<mlir::ModuleOp>(source, &context),
                name);
  }

  mlir::MLIRContext context;

private:
  mlir::func::FuncOp keep(mlir::OwningOpRef<mlir::ModuleOp> module,
                          const std::string &name) {
    if (!module)
      return {};
    modules.push_back(std::move(module));
    return modules.back()->lookupSymbol<mlir::func::FuncOp>(name);
  }

  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
};

/// A tensor of `shape` filled with values uniform in [low, high).
inline interp::Buffer
randomTensor(std::vector<int64_t> shape, interp::Random &random, double low,
             double high,
             interp::StorageType storage = interp::StorageType::BF16) {
  interp::Buffer buffer = interp::Buffer::tensor(std::move(shape), storage);
  for (double &value : buffer.values)
    value = random.uniform(low, high);
  return buffer;
}

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

} // namespace tile::testing

#endif // TILE_UNITTESTS_INTERP_KERNELFIXTURE_H
