//===- tile-run.cpp - run a tile function with the reference evaluator ---===//
//
// Lets a user run a kernel they just wrote without writing C++:
//
//   tile-run examples/rms_norm.mlir --args=7x13,13,1e-6,0 --seed=1
//
// evaluates the function in float64 on seeded random inputs and prints, for
// each result, its type, summary statistics and a checksum of its bits.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/InitTile.h"
#include "tile/Interp/Evaluator.h"
#include "tile/Interp/Inputs.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;
namespace interp = ::tile::interp;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::Required);
static cl::opt<std::string>
    functionName("function",
                 cl::desc("function to run (default: the only tile.kernel)"),
                 cl::value_desc("name"));
static cl::alias functionAlias("f", cl::aliasopt(functionName));
static cl::list<std::string>
    argSpecs("args",
             cl::desc("one spec per argument: a shape such as 7x13 for a "
                      "tensor, a number for a scalar"),
             cl::CommaSeparated, cl::value_desc("spec,spec,..."));
static cl::opt<uint64_t> seed("seed", cl::desc("random seed"), cl::init(0));
static cl::opt<double> low("low", cl::desc("smallest random input"),
                           cl::init(-2.0));
static cl::opt<double> high("high", cl::desc("bound above random inputs"),
                            cl::init(2.0));
static cl::opt<bool> exact("exact",
                           cl::desc("evaluate in exact float64: no rounding "
                                    "at casts or storage-typed inputs"),
                           cl::init(false));
static cl::opt<bool> printValues("print-values",
                                 cl::desc("print every element of each "
                                          "result"),
                                 cl::init(false));

namespace {
func::FuncOp pickFunction(ModuleOp module) {
  if (!functionName.empty()) {
    auto func = module.lookupSymbol<func::FuncOp>(functionName);
    if (!func)
      llvm::errs() << "error: no function @" << functionName << " in "
                   << inputFile << "\n";
    return func;
  }
  SmallVector<func::FuncOp> kernels;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(mlir::tile::TileDialect::getKernelAttrName()))
      kernels.push_back(func);
  if (kernels.size() == 1)
    return kernels.front();
  llvm::errs() << "error: " << inputFile << " holds " << kernels.size()
               << " tile kernels; choose one with --function\n";
  return {};
}

void printBuffer(llvm::raw_ostream &os, Type type, const interp::Buffer &buf) {
  interp::Summary summary = interp::summarize(buf);
  os << "  type: " << type << "  shape: [";
  llvm::interleaveComma(buf.shape, os);
  os << "]\n";
  os << llvm::format("  count: %lld  non-finite: %lld\n",
                     static_cast<long long>(summary.count),
                     static_cast<long long>(summary.nonFinite));
  os << llvm::format("  min: %.17g  max: %.17g\n", summary.min, summary.max);
  os << llvm::format("  mean: %.17g  l2: %.17g\n", summary.mean, summary.l2);
  os << llvm::format("  checksum: %016llx\n",
                     static_cast<unsigned long long>(summary.checksum));
  if (printValues) {
    os << "  values:";
    for (double value : buf.values)
      os << llvm::format(" %.17g", value);
    os << "\n";
  }
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "Tile reference evaluator: runs a tile function "
                              "in float64 on seeded random inputs\n");
  DialectRegistry registry;
  mlir::tile::registerTileDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string error;
  auto file = openInputFile(inputFile, &error);
  if (!file) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  func::FuncOp func = pickFunction(*module);
  if (!func)
    return 1;

  interp::InputOptions inputOptions;
  inputOptions.seed = seed;
  inputOptions.low = low;
  inputOptions.high = high;
  std::vector<std::string> specs(argSpecs.begin(), argSpecs.end());
  auto args = interp::makeInputs(func, specs, inputOptions);
  if (!args) {
    llvm::errs() << "error: " << llvm::toString(args.takeError()) << "\n";
    return 1;
  }
  interp::EvalOptions evalOptions;
  evalOptions.roundStorage = !exact;
  auto results = interp::evaluate(func, *args, evalOptions);
  if (!results) {
    llvm::errs() << "error: " << llvm::toString(results.takeError()) << "\n";
    return 1;
  }

  llvm::raw_ostream &os = llvm::outs();
  os << "function @" << func.getSymName() << "  seed " << seed
     << llvm::format("  inputs uniform in [%g, %g)", low.getValue(),
                     high.getValue())
     << (exact ? "  exact float64" : "") << "\n";
  for (auto [index, buffer] : llvm::enumerate(*results)) {
    os << "result #" << index << "\n";
    printBuffer(os, func.getResultTypes()[index], buffer);
  }
  return 0;
}
