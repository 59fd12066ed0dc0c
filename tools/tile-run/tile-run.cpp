//===- tile-run.cpp - run a tile function with the reference evaluator ---===//
//
// Lets a user run a kernel they just wrote without writing C++:
//
//   tile-run examples/rms_norm.mlir --args=7x13,13,1e-6,0 --seed=1
//
// evaluates the function in float64 on seeded random inputs and prints, for
// each result, its type, summary statistics and a checksum of its bits.
//
// With --gradient-check it derives the backward instead (as tile-differentiate
// would), and compares it with finite differences at every shape asked for:
//
//   tile-run examples/rms_norm.mlir --gradient-check --args=MxN,N,1e-6,0 \
//       --rows=1,7,13 --widths=1,13,1000,3000
//
// With --gradient it also derives the backward and evaluates it on seeded
// random cotangents. With --device it runs the function (and with
// --gradient its derived backward) on GPU 0, JIT-compiled once, at every
// shape asked for, on the inputs the evaluator sees, and compares every
// result with the evaluator's (--bench also times each kernel):
//
//   tile-run examples/rms_norm.mlir --device --gradient \
//       --args=MxN,N,1e-6,0 --rows=1,300 --widths=13,4096
//
// --input=NAME=FILE.npy reads an argument from a NumPy file, and
// --output-dir writes the inputs, results, cotangents and gradients as
// .npy files (RunData.h), so that another framework can be compared on
// identical data.
//
//===----------------------------------------------------------------------===//

#include "TileRun.h"

#include "DeviceCheck.h"
#include "RunData.h"

#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/InitTile.h"
#include "tile/Interp/Evaluator.h"
#include "tile/Interp/GradientCheck.h"
#include "tile/Interp/Inputs.h"
#include "tile/Tools/CommandLine.h"
#include "tile/Tools/ToolSupport.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;
namespace interp = ::tile::interp;

static cl::OptionCategory toolCategory("tile-run options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::Required, cl::cat(toolCategory));
static cl::opt<std::string>
    functionName("function",
                 cl::desc("function to run (default: the only tile.kernel)"),
                 cl::value_desc("name"), cl::cat(toolCategory));
static cl::alias functionAlias("f", cl::aliasopt(functionName),
                               cl::cat(toolCategory));
static cl::list<std::string>
    argSpecs("args",
             cl::desc("one spec per argument: a shape such as 7x13 for a "
                      "tensor, a number for a scalar; empty for an argument "
                      "read with --input"),
             cl::CommaSeparated, cl::value_desc("spec,spec,..."),
             cl::cat(toolCategory));
static cl::list<std::string>
    inputFiles("input",
               cl::desc("read an argument (by name, or #index) from a .npy "
                        "file instead of random numbers; repeatable"),
               cl::value_desc("name=file.npy"), cl::cat(toolCategory));
static cl::opt<std::string>
    outputDir("output-dir",
              cl::desc("write the inputs, the results (float64) and, with "
                       "--gradient, the cotangents and gradients as .npy; "
                       "with --device the GPU's too (*.gpu.npy)"),
              cl::value_desc("dir"), cl::cat(toolCategory));
static cl::opt<uint64_t> seed("seed", cl::desc("random seed"), cl::init(0),
                              cl::cat(toolCategory));
static cl::opt<double> low("low", cl::desc("smallest random input"),
                           cl::init(-2.0), cl::cat(toolCategory));
static cl::opt<double> high("high", cl::desc("bound above random inputs"),
                            cl::init(2.0), cl::cat(toolCategory));
static cl::opt<bool> exact("exact",
                           cl::desc("evaluate in exact float64: no rounding "
                                    "at casts or storage-typed inputs"),
                           cl::init(false), cl::cat(toolCategory));
static cl::opt<bool> printValues("print-values",
                                 cl::desc("print every element of each "
                                          "result"),
                                 cl::init(false), cl::cat(toolCategory));
static cl::opt<bool>
    gradient("gradient",
             cl::desc("also derive the backward and run it on seeded random "
                      "cotangents (--policy picks its recompute policy)"),
             cl::init(false), cl::cat(toolCategory));

static cl::OptionCategory deviceCategory("GPU (--device)");
static cl::opt<bool>
    onDevice("device",
             cl::desc("run on GPU 0 (JIT-compiled) and compare every result "
                      "with the evaluator's; exit status 77 without a GPU"),
             cl::init(false), cl::cat(deviceCategory));
static cl::opt<bool> benchmark("bench",
                               cl::desc("with --device, time each kernel: "
                                        "GB/s next to the stream kernel "
                                        "over as many bytes"),
                               cl::init(false), cl::cat(deviceCategory));
static cl::opt<bool> specializeWidths(
    "specialize-widths",
    cl::desc("with --device, compile for each case's widths (constants in "
             "the kernels, as tile.ops does) rather than once for any width"),
    cl::init(false), cl::cat(deviceCategory));
static cl::opt<int> benchIterations("bench-iterations",
                                    cl::desc("timed runs per kernel"),
                                    cl::init(50), cl::cat(deviceCategory));

static cl::OptionCategory gradientCategory("Gradients");
static cl::opt<bool> gradientCheck(
    "gradient-check",
    cl::desc("derive the backward and compare it with finite differences"),
    cl::init(false), cl::cat(gradientCategory));
static cl::opt<mlir::tile::RecomputePolicy>
    policy("policy", cl::desc("recompute policy of the derived backward"),
           cl::values(clEnumValN(mlir::tile::RecomputePolicy::Recompute,
                                 "recompute", "recompute every intermediate"),
                      clEnumValN(mlir::tile::RecomputePolicy::SaveRowStats,
                                 "save-row-stats", "save per-row values")),
           cl::init(mlir::tile::RecomputePolicy::Recompute),
           cl::cat(gradientCategory));
static cl::opt<bool> mainGrad("main-grad",
                              cl::desc("with --gradient-check: accumulate "
                                       "cross-row gradients into fp32 "
                                       "main_grad arguments"),
                              cl::init(false), cl::cat(gradientCategory));
static cl::opt<unsigned> directions("directions",
                                    cl::desc("random directions per argument"),
                                    cl::init(4), cl::cat(gradientCategory));
static cl::opt<double> tolerance("tolerance",
                                 cl::desc("largest relative error that passes"),
                                 cl::init(1e-6), cl::cat(gradientCategory));
static cl::opt<double> finiteDifferenceStep(
    "fd-step",
    cl::desc("finite-difference step, relative to the input's magnitude"),
    cl::init(interp::FiniteDifferenceOptions().relativeStep),
    cl::cat(gradientCategory));
static cl::list<std::string>
    rowsList("rows",
             cl::desc("values of M in --args (one run per M and N; "
                      "--gradient-check and --device)"),
             cl::CommaSeparated, cl::cat(gradientCategory));
static cl::opt<int64_t> maxElementOps(
    "max-element-ops",
    cl::desc("refuse a case (one of --rows x --widths) estimated to take "
             "more element operations than this (default 2^30, ~20 s; 2^28 "
             "for --gradient-check)"),
    cl::value_desc("count"), cl::cat(gradientCategory));
static cl::list<std::string> widthsList("widths",
                                        cl::desc("values of N in --args"),
                                        cl::CommaSeparated,
                                        cl::cat(gradientCategory));

namespace {
/// Prints an evaluator error: its messages that come from an op already
/// read `file:line:col: error: ...`; the others get the prefix.
void reportError(llvm::Error error) {
  std::string message = llvm::toString(std::move(error));
  if (message.find("error: ") == std::string::npos)
    message = "error: " + message;
  llvm::errs() << message << "\n";
}

func::FuncOp pickFunction(ModuleOp module) {
  // Functions in nested modules count too: the tools print what they read
  // inside a module of their own.
  if (!functionName.empty()) {
    func::FuncOp func;
    module->walk([&](func::FuncOp candidate) {
      if (candidate.getSymName() == functionName && !func)
        func = candidate;
    });
    if (!func) {
      llvm::errs() << "error: no function @" << functionName << " in "
                   << inputFile << "\n";
      return {};
    }
    // A declaration has nothing to run, and a function without the
    // attribute was never held to a kernel's rules (the evaluator and the
    // differentiator rely on them).
    if (failed(mlir::tile::verifyIsKernel(func, "tile-run")))
      return {};
    return func;
  }
  SmallVector<func::FuncOp> kernels;
  module->walk([&](func::FuncOp func) {
    if (func->hasAttr(mlir::tile::TileDialect::getKernelAttrName()))
      kernels.push_back(func);
  });
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
/// `specs` with the dimension placeholders M and N replaced.
std::vector<std::string> substitute(const std::vector<std::string> &specs,
                                    StringRef m, StringRef n) {
  std::vector<std::string> result;
  for (StringRef spec : specs) {
    SmallVector<StringRef> parts;
    spec.split(parts, 'x');
    std::string text;
    for (auto [index, part] : llvm::enumerate(parts)) {
      if (index)
        text += "x";
      text += part == "M" ? m.str() : part == "N" ? n.str() : part.str();
    }
    result.push_back(text);
  }
  return result;
}

/// Every case --args names: its specs with M and N replaced by each value
/// of --rows and --widths (M and N themselves when those are empty).
std::vector<std::vector<std::string>> caseSpecs() {
  std::vector<std::string> rows(rowsList.begin(), rowsList.end());
  std::vector<std::string> widths(widthsList.begin(), widthsList.end());
  if (rows.empty())
    rows.push_back("M");
  if (widths.empty())
    widths.push_back("N");
  std::vector<std::string> specs(argSpecs.begin(), argSpecs.end());
  std::vector<std::vector<std::string>> cases;
  for (const std::string &m : rows)
    for (const std::string &n : widths)
      cases.push_back(substitute(specs, m, n));
  return cases;
}

/// How many cases --rows and --widths make, without making them (the
/// lists may be long: the limit is checked first).
uint64_t caseCount() {
  return uint64_t(std::max<size_t>(1, rowsList.size())) *
         uint64_t(std::max<size_t>(1, widthsList.size()));
}

/// The element operations one case may take: --max-element-ops, or
/// `otherwise` (the library's default for the mode).
int64_t caseWorkLimit(int64_t otherwise) {
  return maxElementOps.getNumOccurrences() ? int64_t(maxElementOps) : otherwise;
}

/// What every mode needs besides the options: the function, its
/// arguments' names and the --input files.
struct Run {
  func::FuncOp func;
  std::vector<std::string> names;
  std::map<unsigned, std::string> files;
  interp::InputOptions inputs;

  llvm::Expected<std::vector<interp::Buffer>>
  makeInputs(const std::vector<std::string> &specs) const {
    return ::tile::run::makeCaseInputs(func, specs, inputs, files, names);
  }
};

/// The backward --policy and --main-grad ask for, derived into `func`'s
/// module (the evaluator runs it; --device's JIT derives its own from the
/// same source with the same options).
FailureOr<mlir::tile::DerivedKernel> derive(func::FuncOp func) {
  mlir::tile::DifferentiateOptions options;
  options.policy = policy;
  options.mainGrad = mainGrad;
  return mlir::tile::differentiateKernel(func, options);
}

/// derive() where --gradient asks for a backward, nothing otherwise.
FailureOr<std::optional<mlir::tile::DerivedKernel>>
deriveIfAsked(func::FuncOp func) {
  if (!gradient)
    return std::optional<mlir::tile::DerivedKernel>();
  FailureOr<mlir::tile::DerivedKernel> derived = derive(func);
  if (failed(derived))
    return failure();
  return std::optional<mlir::tile::DerivedKernel>(*derived);
}

int runGradientCheck(const Run &run) {
  func::FuncOp func = run.func;
  FailureOr<mlir::tile::DerivedKernel> derived = derive(func);
  if (failed(derived))
    return 1;

  llvm::raw_ostream &os = llvm::outs();
  os << "gradient check of @" << func.getSymName() << " against finite "
     << "differences: policy " << mlir::tile::getRecomputePolicyName(policy)
     << (mainGrad ? ", main-grad" : "") << ", seed " << seed << ", "
     << directions << " directions per argument\n";
  interp::GradientCheckOptions checkOptions;
  checkOptions.maxElementOps = caseWorkLimit(checkOptions.maxElementOps);
  checkOptions.directions = directions;
  checkOptions.seed = seed;
  checkOptions.finiteDifferences.relativeStep = finiteDifferenceStep;
  double worst = 0.0;
  unsigned cases = 0, failures = 0;
  for (const std::vector<std::string> &specs : caseSpecs()) {
    auto args = run.makeInputs(specs);
    if (!args) {
      reportError(args.takeError());
      return 1;
    }
    auto report =
        interp::checkGradients(func, derived->backward,
                               derived->forwardWithSaved, *args, checkOptions);
    if (!report) {
      reportError(report.takeError());
      return 1;
    }
    os << "  args " << llvm::join(specs, ",") << "\n";
    for (const interp::ArgumentGradientError &entry : *report) {
      bool pass = entry.maxRelativeError <= tolerance;
      ++cases;
      failures += !pass;
      worst = std::max(worst, entry.maxRelativeError);
      std::string type;
      llvm::raw_string_ostream(type) << func.getArgumentTypes()[entry.argument];
      os << llvm::format("    argument #%u %-20s max relative error %.2e  %s\n",
                         entry.argument, type.c_str(), entry.maxRelativeError,
                         pass ? "ok" : "FAIL");
    }
  }
  os << llvm::format("%u gradients checked, %u failed, worst relative error "
                     "%.2e (tolerance %.0e)\n",
                     cases, failures, worst, tolerance.getValue());
  return failures == 0 ? 0 : 1;
}

/// --device: every case of --args (with M and N taken from --rows and
/// --widths, as for --gradient-check) on the GPU against the evaluator.
int runOnDevice(const Run &run, StringRef source) {
  std::vector<::tile::run::DeviceCase> cases;
  // Every case's inputs are held at once (the GPU check runs them in one
  // lease of the device): as much as one value may hold, in all.
  int64_t held = 0;
  for (const std::vector<std::string> &specs : caseSpecs()) {
    auto args = run.makeInputs(specs);
    if (!args) {
      reportError(args.takeError());
      return 1;
    }
    for (const interp::Buffer &arg : *args)
      held += arg.numElements();
    if (held > interp::kMaxElements) {
      llvm::errs() << "error: the cases of --args, --rows and --widths hold "
                      "more than "
                   << interp::kMaxElements
                   << " input elements in all, the limit of --device\n";
      return 1;
    }
    cases.push_back({llvm::join(specs, ","), std::move(*args)});
  }
  auto derived = deriveIfAsked(run.func);
  if (failed(derived))
    return 1;
  ::tile::run::DeviceCheckOptions options;
  options.policy = policy;
  options.seed = seed;
  options.argumentNames = run.names;
  options.outputDir = outputDir;
  options.specializeWidths = specializeWidths;
  options.benchIterations = benchmark ? benchIterations : 0;
  options.maxElementOps = caseWorkLimit(interp::kDefaultMaxElementOps);
  return ::tile::run::runDeviceCheck(run.func, *derived, source.str(), cases,
                                     options, llvm::outs());
}

/// The evaluator alone: the results' summaries and, with --gradient, the
/// gradients'.
int runEvaluator(const Run &run) {
  func::FuncOp func = run.func;
  std::vector<std::string> specs(argSpecs.begin(), argSpecs.end());
  auto args = run.makeInputs(specs);
  if (!args) {
    reportError(args.takeError());
    return 1;
  }
  auto derived = deriveIfAsked(func);
  if (failed(derived))
    return 1;
  interp::EvalOptions evalOptions;
  evalOptions.roundStorage = !exact;
  evalOptions.maxElementOps = caseWorkLimit(evalOptions.maxElementOps);
  auto evaluation =
      ::tile::run::evaluateCase(func, *derived, *args, seed, evalOptions);
  if (!evaluation) {
    reportError(evaluation.takeError());
    return 1;
  }

  llvm::raw_ostream &os = llvm::outs();
  os << "function @" << func.getSymName() << "  seed " << seed
     << llvm::format("  inputs uniform in [%g, %g)", low.getValue(),
                     high.getValue())
     << (exact ? "  exact float64" : "") << "\n";
  for (auto [index, buffer] : llvm::enumerate(evaluation->results)) {
    os << "result #" << index << "\n";
    printBuffer(os, func.getResultTypes()[index], buffer);
  }
  for (auto [index, buffer] : llvm::enumerate(evaluation->gradients)) {
    func::FuncOp backward = (*derived)->backward;
    os << ::tile::run::gradientName(backward, index, run.names) << " (@"
       << backward.getSymName() << " result #" << index
       << ", seeded cotangents)\n";
    printBuffer(os, backward.getResultTypes()[index], buffer);
  }
  if (!outputDir.empty())
    if (llvm::Error e = ::tile::run::writeEvaluation(outputDir, *derived, *args,
                                                     *evaluation, run.names)) {
      reportError(std::move(e));
      return 1;
    }
  return 0;
}

/// The most cases --rows and --widths may make (each is a whole run).
constexpr size_t kMaxCases = 1024;

/// Option combinations that mean nothing: an error, not a silent no-op.
bool checkOptionCombinations() {
  auto reject = [](const llvm::Twine &message) {
    llvm::errs() << "error: " << message << "\n";
    return false;
  };
  if (gradientCheck && (onDevice || gradient))
    return reject("--gradient-check runs alone: it compares the derived "
                  "backward with finite differences on the evaluator");
  if (mainGrad && !gradientCheck)
    return reject("--main-grad applies to --gradient-check");
  if ((benchmark || specializeWidths) && !onDevice)
    return reject("--bench and --specialize-widths are for the GPU: add "
                  "--device");
  if (benchIterations < 1)
    return reject("--bench-iterations must be at least 1");
  if (maxElementOps.getNumOccurrences() && maxElementOps < 1)
    return reject("--max-element-ops must be at least 1");
  if (uint64_t cases = caseCount(); cases > kMaxCases)
    return reject("--rows and --widths give " + std::to_string(cases) +
                  " cases, over tile-run's limit of " +
                  std::to_string(kMaxCases));
  if (!outputDir.empty() && (gradientCheck || caseSpecs().size() > 1))
    return reject("--output-dir writes one case: not with --gradient-check, "
                  "--rows or --widths of more than one value");
  return true;
}
} // namespace

int ::tile::run::runTileRun(int argc, const char *const *argv) {
  // Options start from their defaults on every call: the command-line
  // fuzzer calls this many times in one process.
  cl::ResetAllOptionOccurrences();
  mlir::tile::prepareCommandLine(
      "tile-run", {&toolCategory, &deviceCategory, &gradientCategory});
  // With an error stream, a bad command line returns instead of exiting.
  if (!cl::ParseCommandLineOptions(argc, argv,
                                   "Tile's reference evaluator and GPU "
                                   "check: runs a tile function in float64 "
                                   "on seeded random inputs (or .npy "
                                   "files), and on the GPU with --device\n",
                                   &llvm::errs()))
    return 1;
  if (!checkOptionCombinations())
    return 1;
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
  unsigned bufferId =
      sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  if (mlir::tile::reportUnparsableInput(sourceMgr, bufferId))
    return 1;
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  Run run;
  run.func = pickFunction(*module);
  if (!run.func)
    return 1;
  run.names = ::tile::run::argumentNames(run.func, sourceMgr);
  auto files = ::tile::run::parseInputFiles(
      std::vector<std::string>(inputFiles.begin(), inputFiles.end()),
      run.names);
  if (!files) {
    reportError(files.takeError());
    return 1;
  }
  run.files = std::move(*files);
  run.inputs.seed = seed;
  run.inputs.low = low;
  run.inputs.high = high;
  if (gradientCheck)
    return runGradientCheck(run);
  if (onDevice)
    return runOnDevice(run, sourceMgr.getMemoryBuffer(bufferId)->getBuffer());
  return runEvaluator(run);
}
