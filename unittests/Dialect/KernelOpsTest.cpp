//===- KernelOpsTest.cpp - every op of KernelOps.def, end to end ---------===//
//
// KernelOps.def is the one list of what a kernel may contain. The verifier,
// the derivative rules and the evaluator are generated from it; this test
// holds the list to what that promises: a sample kernel of every op
// verifies, evaluates, has a derivative that matches finite differences of
// the evaluator (where gradients flow), and lowers — forward and backward —
// to PTX. An op added to the list without a sample here fails the test.
//
//===----------------------------------------------------------------------===//

#include "../Interp/KernelFixture.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/Interp/GradientCheck.h"
#include "tile/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/Support/FileSystem.h"

#include <map>
#include <set>

using namespace mlir;
namespace interp = ::tile::interp;

namespace {
std::vector<std::string> listedOps() {
  std::vector<std::string> names;
#define TILE_KERNEL_OP(QualifiedName)                                          \
  names.push_back(QualifiedName::getOperationName().str());
#include "tile/Dialect/Tile/IR/KernelOps.def"
  return names;
}

/// The ops no gradient flows through.
std::set<std::string> nonDifferentiableOps() {
  std::set<std::string> names;
#define TILE_ARITH_FLOAT(Name)                                                 \
  names.insert(arith::Name::getOperationName().str());
#include "tile/Dialect/Tile/IR/KernelOps.def"
  return names;
}

/// A kernel body using the op, from %x, %y, %z : tensor<?x?xf32> (values in
/// [0.5, 1.5), so that log, sqrt and pow are defined) to %r.
const std::map<std::string, std::string> kSamples = {
    {"arith.addf", "%r = arith.addf %x, %y : tensor<?x?xf32>"},
    {"arith.subf", "%r = arith.subf %x, %y : tensor<?x?xf32>"},
    {"arith.mulf", "%r = arith.mulf %x, %y : tensor<?x?xf32>"},
    {"arith.divf", "%r = arith.divf %x, %y : tensor<?x?xf32>"},
    {"arith.negf", "%r = arith.negf %x : tensor<?x?xf32>"},
    {"arith.maximumf", "%r = arith.maximumf %x, %y : tensor<?x?xf32>"},
    {"arith.maxnumf", "%r = arith.maxnumf %x, %y : tensor<?x?xf32>"},
    {"arith.minimumf", "%r = arith.minimumf %x, %y : tensor<?x?xf32>"},
    {"arith.minnumf", "%r = arith.minnumf %x, %y : tensor<?x?xf32>"},
    {"arith.cmpf", "%c = arith.cmpf olt, %x, %y : tensor<?x?xf32>\n"
                   "%r = arith.select %c, %x, %z : tensor<?x?xi1>, "
                   "tensor<?x?xf32>"},
    {"arith.select", "%c = arith.cmpf ogt, %x, %y : tensor<?x?xf32>\n"
                     "%r = arith.select %c, %y, %z : tensor<?x?xi1>, "
                     "tensor<?x?xf32>"},
    {"math.exp", "%r = math.exp %x : tensor<?x?xf32>"},
    {"math.exp2", "%r = math.exp2 %x : tensor<?x?xf32>"},
    {"math.expm1", "%r = math.expm1 %x : tensor<?x?xf32>"},
    {"math.log", "%r = math.log %x : tensor<?x?xf32>"},
    {"math.log2", "%r = math.log2 %x : tensor<?x?xf32>"},
    {"math.log10", "%r = math.log10 %x : tensor<?x?xf32>"},
    {"math.log1p", "%r = math.log1p %x : tensor<?x?xf32>"},
    {"math.sqrt", "%r = math.sqrt %x : tensor<?x?xf32>"},
    {"math.rsqrt", "%r = math.rsqrt %x : tensor<?x?xf32>"},
    {"math.tanh", "%r = math.tanh %x : tensor<?x?xf32>"},
    {"math.erf", "%r = math.erf %x : tensor<?x?xf32>"},
    {"math.sin", "%r = math.sin %x : tensor<?x?xf32>"},
    {"math.cos", "%r = math.cos %x : tensor<?x?xf32>"},
    {"math.absf", "%d = arith.subf %x, %y : tensor<?x?xf32>\n"
                  "%r = math.absf %d : tensor<?x?xf32>"},
    // Piecewise constant: the gradient is zero, as finite differences say
    // away from the steps.
    {"math.floor", "%s = arith.mulf %x, %y : tensor<?x?xf32>\n"
                   "%f = math.floor %s : tensor<?x?xf32>\n"
                   "%r = arith.mulf %f, %z : tensor<?x?xf32>"},
    {"math.ceil", "%s = arith.mulf %x, %y : tensor<?x?xf32>\n"
                  "%f = math.ceil %s : tensor<?x?xf32>\n"
                  "%r = arith.mulf %f, %z : tensor<?x?xf32>"},
    {"math.powf", "%r = math.powf %x, %y : tensor<?x?xf32>"},
    {"math.fma", "%r = math.fma %x, %y, %z : tensor<?x?xf32>"},
    {"arith.remf", "%r = arith.remf %x, %y : tensor<?x?xf32>"},
    // Index arithmetic: sizes of a slice of %x (its whole width, computed).
    {"arith.constant", "%r = arith.addf %x, %x : tensor<?x?xf32>"},
    {"arith.addi", "%s = arith.addi %w, %c0 : index\n"
                   "%r = tile.slice %x [%c0, %s] : tensor<?x?xf32> -> "
                   "tensor<?x?xf32>"},
    {"arith.subi", "%s = arith.subi %w, %c0 : index\n"
                   "%r = tile.slice %x [%c0, %s] : tensor<?x?xf32> -> "
                   "tensor<?x?xf32>"},
    {"arith.muli", "%s = arith.muli %w, %c1 : index\n"
                   "%r = tile.slice %x [%c0, %s] : tensor<?x?xf32> -> "
                   "tensor<?x?xf32>"},
    {"arith.divsi", "%s = arith.divsi %w, %c1 : index\n"
                    "%r = tile.slice %x [%c0, %s] : tensor<?x?xf32> -> "
                    "tensor<?x?xf32>"},
    {"arith.divui", "%s = arith.divui %w, %c1 : index\n"
                    "%r = tile.slice %x [%c0, %s] : tensor<?x?xf32> -> "
                    "tensor<?x?xf32>"},
    {"arith.remsi", "%b = arith.addi %w, %c1 : index\n"
                    "%s = arith.remsi %w, %b : index\n"
                    "%r = tile.slice %x [%c0, %s] : tensor<?x?xf32> -> "
                    "tensor<?x?xf32>"},
    {"arith.remui", "%b = arith.addi %w, %c1 : index\n"
                    "%s = arith.remui %w, %b : index\n"
                    "%r = tile.slice %x [%c0, %s] : tensor<?x?xf32> -> "
                    "tensor<?x?xf32>"},
    {"arith.maxsi", "%s = arith.maxsi %w, %c0 : index\n"
                    "%r = tile.slice %x [%c0, %s] : tensor<?x?xf32> -> "
                    "tensor<?x?xf32>"},
    {"arith.minsi", "%s = arith.minsi %w, %w : index\n"
                    "%r = tile.slice %x [%c0, %s] : tensor<?x?xf32> -> "
                    "tensor<?x?xf32>"},
    {"arith.index_cast", "%i = arith.index_cast %w : index to i64\n"
                         "%s = arith.index_cast %i : i64 to index\n"
                         "%r = tile.slice %x [%c0, %s] : tensor<?x?xf32> -> "
                         "tensor<?x?xf32>"},
    {"arith.sitofp", "%i = arith.index_cast %w : index to i64\n"
                     "%f = arith.sitofp %i : i64 to f32\n"
                     "%v = tile.splat %f like %x : f32, tensor<?x?xf32> -> "
                     "tensor<?x?xf32>\n"
                     "%r = arith.mulf %x, %v : tensor<?x?xf32>"},
};

std::string kernelName(const std::string &op) {
  std::string name = "k_" + op;
  for (char &c : name)
    if (c == '.')
      c = '_';
  return name;
}

std::string sampleModule(const std::vector<std::string> &ops) {
  std::string text = "module {\n";
  for (const std::string &op : ops)
    text += "func.func @" + kernelName(op) +
            "(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>, %z: tensor<?x?xf32>) "
            "-> tensor<?x?xf32> attributes {tile.kernel} {\n"
            "%c0 = arith.constant 0 : index\n"
            "%c1 = arith.constant 1 : index\n"
            "%w = tensor.dim %x, %c1 : tensor<?x?xf32>\n" +
            kSamples.at(op) + "\nreturn %r : tensor<?x?xf32>\n}\n";
  return text + "}\n";
}

class KernelOpsTest : public ::tile::testing::KernelFixture {
protected:
  KernelOpsTest() {
    DialectRegistry registry;
    mlir::tile::registerGpuTargets(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
};

TEST_F(KernelOpsTest, TheListIsWhatTheVerifierNames) {
  std::string named = mlir::tile::supportedKernelOps();
  for (const std::string &op : listedOps())
    EXPECT_NE(named.find(op), std::string::npos) << op;
}

TEST_F(KernelOpsTest, EveryListedOpHasASample) {
  for (const std::string &op : listedOps())
    EXPECT_TRUE(kSamples.count(op))
        << op << " is in KernelOps.def but has no sample kernel here";
  EXPECT_EQ(kSamples.size(), listedOps().size()) << "a sample of an op that "
                                                    "is not in KernelOps.def";
}

TEST_F(KernelOpsTest, EveryOpEvaluatesDifferentiatesAndLowers) {
  std::vector<std::string> ops;
  for (const std::string &op : listedOps())
    if (kSamples.count(op))
      ops.push_back(op);
  std::string source = sampleModule(ops);
  auto module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module) << source;
  std::set<std::string> noGradient = nonDifferentiableOps();
  interp::Random rng(7);
  for (const std::string &op : ops) {
    SCOPED_TRACE(op);
    auto func = module->lookupSymbol<func::FuncOp>(kernelName(op));
    ASSERT_TRUE(func);
    std::vector<interp::Buffer> args;
    for (int i = 0; i < 3; ++i)
      args.push_back(::tile::testing::randomTensor({3, 5}, rng, 0.5, 1.5,
                                                   interp::StorageType::F32));
    auto results = interp::evaluate(func, args);
    ASSERT_TRUE(static_cast<bool>(results))
        << llvm::toString(results.takeError());
    for (double value : (*results)[0].values)
      EXPECT_TRUE(std::isfinite(value));
    if (noGradient.count(op))
      continue;
    FailureOr<mlir::tile::DerivedKernel> derived =
        mlir::tile::differentiateKernel(func, {});
    ASSERT_TRUE(succeeded(derived));
    auto errors = interp::checkGradients(func, derived->backward,
                                         derived->forwardWithSaved, args);
    ASSERT_TRUE(static_cast<bool>(errors))
        << llvm::toString(errors.takeError());
    for (const interp::ArgumentGradientError &error : *errors)
      EXPECT_LE(error.maxRelativeError, 1e-6)
          << "argument " << error.argument << ": derived " << error.derived
          << ", finite differences " << error.numerical;
  }
  // Every forward kernel and every derived backward, in one module.
  mlir::tile::PtxOptions options;
  options.chip = "sm_90a";
  if (!llvm::sys::fs::exists(mlir::tile::defaultLibdevicePath()))
    GTEST_SKIP() << "no libdevice at " << mlir::tile::defaultLibdevicePath()
                 << ": the PTX half needs the CUDA toolkit";
  auto ptx = mlir::tile::compileToPtx(*module, options);
  ASSERT_TRUE(succeeded(ptx));
  std::string all;
  for (auto &[name, text] : *ptx)
    all += text;
  for (const std::string &op : ops)
    EXPECT_NE(all.find(".entry " + kernelName(op) + "("), std::string::npos)
        << op;
}
} // namespace
