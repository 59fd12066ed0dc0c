//===- tile-bench.cpp - GB/s of the operators, and the ceiling -----------===//
//
// Measures SwiGLU and RMSNorm, forward and backward, at bf16, f16 and f32,
// and in the same run the streaming ceiling: a 2-read-1-write kernel (z =
// x + y) of Tile's own, at 2^28 elements. CUDA events around each launch,
// warm-up first, the median of many runs, input sets rotated when one set
// would fit in L2. Bytes follow BENCHMARKS.md: each input read once, each
// output written once, workspace not counted. Each figure also comes
// with the same stream kernel run over the same number of bytes
// ("same-size"), which tells a kernel held by its small size from a slow
// one. --json writes every figure in the envelope every benchmark writes
// (benchmarks/README.md, "Results"; BenchTool.h).
//
// Device time: before each timed call the GPU is given a stream kernel of
// about 40 us to run, so the start event fires when the GPU reaches the
// call, not while the host is still preparing it; the host's per-call cost
// (argument checks, cuLaunchKernel) is then hidden, as it is in a training
// step that runs ahead of the GPU (and as triton.testing.do_bench's cache
// flush hides it). --host-inclusive times from an idle GPU instead: the
// figure then includes the host's cost of the call.
//
//   tile-bench [--json=FILE] [--iterations=N] [--dtypes=bf16,f16,f32]
//              [--threads-per-cta=N] (a schedule override, for experiments)
//              [--rows-per-cta=N]   (likewise)
//              [--ctas=N]           (persistent grids' CTAs, likewise)
//              [--row-grid]         (SwiGLU one CTA per row, likewise)
//              [--shapes=MxN,...]   (only these shapes: for a profiler)
//              [--host-inclusive]   (time from an idle GPU; see above)
//              [--no-register-caps] (load kernels as the JIT made them)
//   tile-bench mlp ...              (the tiled MLP: see MLPBench.cpp)
//   tile-bench grouped-mlp ...      (the MoE MLP: see GroupedMLPBench.cpp)
//
//===----------------------------------------------------------------------===//

#include "BenchTool.h"

#include "tile/Launcher/Launcher.h"
#include "tile/Ops/Ops.h"
#include "tile/Tools/CommandLine.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace tile;
using rt::DType;

namespace {
constexpr size_t kRotateBelow = 512ull << 20; // a set this small may sit in L2

struct Result {
  std::string kernel, dtype, shape;
  double bytes = 0, ms = 0;
  /// The ceiling's stream kernel over the same number of bytes (0: not
  /// measured).
  double streamGbps = 0;
  double gbps() const { return bytes / (ms * 1e-3) / 1e9; }
};

class Bench {
public:
  Bench(ops::Operators &ops, int iterations)
      : ops(ops), iterations(iterations) {}

  /// A tensor filled with a small finite value in every dtype (0x3C bytes).
  rt::TensorView tensor(std::vector<int64_t> shape, DType dtype) {
    size_t count = 1;
    for (int64_t size : shape)
      count *= static_cast<size_t>(size);
    auto buffer =
        rt::DeviceBuffer::allocate(ops.device(), count * rt::byteSize(dtype));
    if (!buffer) {
      error = buffer.message();
      return {};
    }
    (void)buffer->fill(0x3C);
    rt::TensorView view;
    view.data = buffer->data();
    view.shape = std::move(shape);
    view.dtype = dtype;
    buffers.push_back(std::move(*buffer));
    return view;
  }

  /// Work queued before each timed call (device time), or empty.
  std::function<rt::Status()> ahead;

  /// Median milliseconds of `run(set)` over rotating sets.
  rt::StatusOr<double> time(int sets,
                            const std::function<rt::Status(int)> &run) {
    return rt::medianMilliseconds(
        ops.device(), iterations, [&](int i) { return run(i % sets); }, ahead);
  }

  static int setsFor(double bytes) {
    return bytes >= kRotateBelow ? 1
                                 : static_cast<int>(kRotateBelow / bytes) + 1;
  }

  void release() { buffers.clear(); }

  ops::Operators &ops;
  int iterations;
  std::string error;

private:
  std::vector<rt::DeviceBuffer> buffers;
};

std::string shapeText(int64_t m, int64_t n) {
  return std::to_string(m) + "x" + std::to_string(n);
}
} // namespace

namespace {
namespace cl = llvm::cl;

cl::OptionCategory category("tile-bench options");
cl::opt<std::string> jsonPath("json", cl::desc("also write the table as JSON"),
                              cl::value_desc("file"), cl::cat(category));
cl::opt<int> iterations("iterations", cl::desc("timed runs per figure"),
                        cl::init(50), cl::cat(category));
cl::list<std::string> dtypeNames("dtypes",
                                 cl::desc("dtypes to run: bf16, f16, f32"),
                                 cl::CommaSeparated, cl::cat(category));
cl::list<std::string> shapeList("shapes",
                                cl::desc("only these shapes (MxN): for a "
                                         "profiler"),
                                cl::CommaSeparated, cl::cat(category));
cl::opt<bool> hostInclusive("host-inclusive",
                            cl::desc("time from an idle GPU: the figures "
                                     "include the host's cost of each call"),
                            cl::cat(category));
cl::OptionCategory scheduleCategory("Schedule overrides (experiments)");
// --threads-per-cta, --ctas, --rows-per-cta, --row-grid, --fold-finalize,
// --vector-width: ScheduleOptions.def.
mlir::tile::ScheduleCommandLine scheduleFlags(scheduleCategory);
cl::opt<bool> noRegisterCaps("no-register-caps",
                             cl::desc("load kernels as the JIT made them"),
                             cl::cat(scheduleCategory));

cl::SubCommand mlpCommand("mlp", "the tiled SwiGLU MLP's step against the "
                                 "untiled one (MLPBench.cpp)");
cl::opt<std::string> mlpJson("json", cl::desc("also write the table as JSON"),
                             cl::value_desc("file"), cl::sub(mlpCommand));
cl::opt<int> mlpIterations("iterations", cl::desc("timed steps per row"),
                           cl::init(5), cl::sub(mlpCommand));
cl::opt<int64_t> maxSequence("max-sequence",
                             cl::desc("the longest sequence measured"),
                             cl::init(131072), cl::sub(mlpCommand));
cl::opt<int64_t> shards("shards",
                        cl::desc("the tiled MLP's shards (0: automatic)"),
                        cl::sub(mlpCommand));
cl::opt<uint64_t> budgetMib(
    "budget-mib", cl::desc("the automatic shards' memory budget, in MiB"),
    cl::init(ops::MLPOptions().memoryBudgetBytes >> 20), cl::sub(mlpCommand));

cl::SubCommand groupedCommand("grouped-mlp",
                              "the grouped (MoE) SwiGLU MLP's step "
                              "(GroupedMLPBench.cpp)");
cl::opt<std::string> groupedJson("json",
                                 cl::desc("also write the table as JSON"),
                                 cl::value_desc("file"),
                                 cl::sub(groupedCommand));
cl::opt<int> groupedIterations("iterations", cl::desc("timed steps per row"),
                               cl::init(5), cl::sub(groupedCommand));
cl::opt<int> groupedStreams(
    "streams", cl::desc("the streams the experts' GEMMs spread over"),
    cl::init(ops::MLPOptions().streams), cl::sub(groupedCommand));

/// Whether --shapes (",MxN,...," or empty for every shape) asks for m x n.
bool selected(const std::string &shapes, int64_t m, int64_t n) {
  return shapes.empty() ||
         shapes.find("," + shapeText(m, n) + ",") != std::string::npos;
}

/// Compiles the stream kernel into `launcher`, queues it (on buffers of
/// `aheadBuffers`) ahead of each of `bench`'s timed calls unless
/// `hostInclusive`, and measures the ceiling: results' first row.
rt::Status measureCeiling(Bench &bench, Bench &aheadBuffers,
                          std::unique_ptr<ops::Launcher> &launcher,
                          bool hostInclusive, std::vector<Result> &results) {
  ops::Operators &ops = bench.ops;
  // The ceiling: z = x + y over 2^28 f32 elements, Tile's own kernel.
  jit::CompileOptions options = jit::CompileOptions::forDevice(ops.device());
  auto compiled = ops.compiler().compile(ops::kStreamKernelSource, options);
  if (!compiled)
    return compiled.takeStatus();
  auto created = ops::Launcher::create(ops.device(), *compiled);
  if (!created)
    return created.takeStatus();
  launcher = std::move(*created);
  // The work queued ahead of each timed call: the same kernel over 2^24
  // elements (about 40 us), on buffers of its own.
  if (!hostInclusive) {
    rt::TensorView ax = aheadBuffers.tensor({4096, 4096}, DType::F32),
                   ay = aheadBuffers.tensor({4096, 4096}, DType::F32),
                   az = aheadBuffers.tensor({4096, 4096}, DType::F32);
    if (!aheadBuffers.error.empty())
      return rt::Status::error(aheadBuffers.error);
    bench.ahead = [&launcher, ax, ay, az] {
      return launcher->run("stream", {ax, ay}, {az});
    };
  }
  int64_t m = 16384, n = 16384;
  rt::TensorView x = bench.tensor({m, n}, DType::F32),
                 y = bench.tensor({m, n}, DType::F32),
                 z = bench.tensor({m, n}, DType::F32);
  if (!bench.error.empty())
    return rt::Status::error(bench.error);
  auto ms = bench.time(1, [&](int) {
    return launcher->run("stream", {x, y}, {z});
  });
  if (!ms)
    return ms.takeStatus();
  results.push_back({"ceiling (2 reads, 1 write)", "f32", shapeText(m, n),
                     3.0 * m * n * 4, *ms});
  bench.release();
  return rt::Status::ok();
}

/// SwiGLU forward and backward at `dtype`, every selected shape.
rt::Status measureSwiGLU(Bench &bench, DType dtype, const std::string &shapes,
                         std::vector<Result> &results) {
  ops::Operators &ops = bench.ops;
  double e = rt::byteSize(dtype);
  for (int64_t m : {1024, 4096, 16384})
    for (int64_t h : {2048, 4096, 11008}) {
      if (!selected(shapes, m, h))
        continue;
      double bytes = 3.0 * m * h * e;
      int sets = Bench::setsFor(bytes);
      std::vector<std::vector<rt::TensorView>> io;
      for (int s = 0; s < sets; ++s)
        io.push_back({bench.tensor({m, h}, dtype), bench.tensor({m, h}, dtype),
                      bench.tensor({m, h}, dtype), bench.tensor({m, h}, dtype),
                      bench.tensor({m, h}, dtype)});
      if (!bench.error.empty())
        return rt::Status::error(bench.error);
      auto fwd = bench.time(sets, [&](int s) {
        auto &t = io[s];
        return ops.swigluForward(t[0], t[1], t[2]);
      });
      auto bwd = bench.time(sets, [&](int s) {
        auto &t = io[s];
        return ops.swigluBackward(t[0], t[1], t[2], t[3], t[4]);
      });
      if (!fwd || !bwd)
        return !fwd ? fwd.takeStatus() : bwd.takeStatus();
      results.push_back({"swiglu fwd", rt::name(dtype), shapeText(m, h),
                         3.0 * m * h * e, *fwd});
      results.push_back({"swiglu bwd", rt::name(dtype), shapeText(m, h),
                         5.0 * m * h * e, *bwd});
      bench.release();
    }
  return rt::Status::ok();
}

/// RMSNorm forward and backward at `dtype`, every selected shape.
rt::Status measureRMSNorm(Bench &bench, DType dtype, const std::string &shapes,
                          std::vector<Result> &results) {
  ops::Operators &ops = bench.ops;
  double e = rt::byteSize(dtype);
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{16384, 4096},
                                                              {32768, 8192},
                                                              {65536, 1024},
                                                              {4096, 16384},
                                                              {4096, 4096},
                                                              {4096, 1024}}) {
    if (!selected(shapes, m, n))
      continue;
    double bytes = 3.0 * m * n * e;
    int sets = Bench::setsFor(bytes);
    std::vector<std::vector<rt::TensorView>> io;
    for (int s = 0; s < sets; ++s)
      io.push_back({bench.tensor({m, n}, dtype), bench.tensor({n}, dtype),
                    bench.tensor({m, n}, dtype), bench.tensor({m, n}, dtype),
                    bench.tensor({m, n}, dtype), bench.tensor({n}, dtype)});
    if (!bench.error.empty())
      return rt::Status::error(bench.error);
    auto fwd = bench.time(sets, [&](int s) {
      auto &t = io[s];
      return ops.rmsNormForward(t[0], t[1], 1e-6f, 0.0f, t[2]);
    });
    auto bwd = bench.time(sets, [&](int s) {
      auto &t = io[s];
      return ops.rmsNormBackward(t[0], t[1], 1e-6f, 0.0f, t[3], t[4], t[5]);
    });
    if (!fwd || !bwd)
      return !fwd ? fwd.takeStatus() : bwd.takeStatus();
    // RMSNorm fwd 2·M·N·e (+ w), bwd 3·M·N·e (+ w, + dW).
    results.push_back({"rms_norm fwd", rt::name(dtype), shapeText(m, n),
                       2.0 * m * n * e + n * e, *fwd});
    results.push_back({"rms_norm bwd", rt::name(dtype), shapeText(m, n),
                       3.0 * m * n * e + 2.0 * n * e, *bwd});
    bench.release();
  }
  return rt::Status::ok();
}

/// Sets each result's (but the ceiling's) streamGbps.
///
/// The ceiling's stream kernel again, over as many bytes as each kernel
/// moves (f32, 1024 columns), timed the same way: what a pure
/// 2-read-1-write stream reaches at that size. A kernel far below the
/// ceiling but close to this figure is held by its size (launch, ramp,
/// the last wave), not by its code.
rt::Status measureSameSize(Bench &bench, ops::Launcher &launcher,
                           std::vector<Result> &results) {
  std::map<int64_t, double> streamAt; // f32 elements -> GB/s
  for (size_t i = 1; i < results.size(); ++i) {
    Result &r = results[i];
    int64_t elements =
        std::max<int64_t>(1, std::llround(r.bytes / 12.0 / 1024)) * 1024;
    auto [at, inserted] = streamAt.try_emplace(elements, 0.0);
    if (inserted) {
      double bytes = 12.0 * elements;
      int sets = Bench::setsFor(bytes);
      std::vector<std::vector<rt::TensorView>> io;
      for (int s = 0; s < sets; ++s)
        io.push_back({bench.tensor({elements / 1024, 1024}, DType::F32),
                      bench.tensor({elements / 1024, 1024}, DType::F32),
                      bench.tensor({elements / 1024, 1024}, DType::F32)});
      if (!bench.error.empty())
        return rt::Status::error(bench.error);
      auto ms = bench.time(sets, [&](int s) {
        return launcher.run("stream", {io[s][0], io[s][1]}, {io[s][2]});
      });
      if (!ms)
        return ms.takeStatus();
      at->second = bytes / (*ms * 1e-3) / 1e9;
      bench.release();
    }
    r.streamGbps = at->second;
  }
  return rt::Status::ok();
}

using CappedLoads = std::vector<std::pair<std::string, ops::KernelLoad>>;

/// The kernels the launcher also loaded under a register cap (launched on
/// grids of more than one wave).
CappedLoads cappedLoads(ops::Operators &ops) {
  CappedLoads capped;
  for (auto &[key, load] : ops.kernelLoads())
    if (load.cappedRegisters)
      capped.push_back({key, load});
  return capped;
}

/// The results next to the ceiling and the same-size stream, then the
/// register caps.
void printTable(const std::vector<Result> &results, double ceiling,
                const CappedLoads &capped) {
  std::printf("\n%-28s %-6s %-12s %10s %10s %8s %10s\n", "kernel", "dtype",
              "shape", "ms", "GB/s", "ceiling", "same-size");
  for (const Result &r : results)
    std::printf("%-28s %-6s %-12s %10.4f %10.0f %8.2f %10.2f\n",
                r.kernel.c_str(), r.dtype.c_str(), r.shape.c_str(), r.ms,
                r.gbps(), r.gbps() / ceiling,
                r.streamGbps ? r.gbps() / r.streamGbps : 1.0);
  std::printf("(same-size: GB/s over the ceiling's stream kernel run over "
              "the same bytes)\n");
  if (!capped.empty())
    std::printf("\nregister caps (as compiled -> capped):\n");
  for (auto &[key, load] : capped)
    std::printf("  %s %s\n", key.c_str(), ops::describe(load).c_str());
}

/// The table and the register caps as JSON, into `path`.
rt::Status writeJson(const std::string &path, ops::Operators &ops,
                     int iterations, bool hostInclusive,
                     const std::vector<Result> &results, double ceiling,
                     const CappedLoads &capped) {
  BenchReport report;
  report.benchmark = "tile-bench";
  report.device = ops.device().name();
  report.settings = {{"iterations", iterations},
                     {"timing", hostInclusive ? "host-inclusive" : "device"}};
  for (const Result &r : results) {
    JsonFields row = {
        {"case", r.kernel}, {"kernel", r.kernel},
        {"dtype", r.dtype}, {"shape", r.shape},
        {"bytes", r.bytes}, {"ms", r.ms},
        {"gbps", r.gbps()}, {"ceiling_ratio", r.gbps() / ceiling}};
    if (r.streamGbps) {
      row.emplace_back("stream_same_bytes_gbps", r.streamGbps);
      row.emplace_back("stream_same_bytes_ratio", r.gbps() / r.streamGbps);
    }
    report.results.push_back(std::move(row));
  }
  llvm::json::Array caps;
  for (const auto &[compilation, load] : capped)
    caps.push_back(
        llvm::json::Object{{"compilation", compilation},
                           {"kernel", load.name},
                           {"threads", load.threads},
                           {"registers", load.registers},
                           {"resident_ctas", load.residentCtas},
                           {"capped_registers", load.cappedRegisters},
                           {"capped_resident_ctas", load.cappedResidentCtas}});
  report.extra = {{"register_caps", std::move(caps)}};
  return writeReport(path, report);
}

/// The operator benchmarks: the ceiling, SwiGLU and RMSNorm at each dtype,
/// the same-size stream figures, then the table (and --json).
rt::Status runOperatorBench(const ops::ScheduleOverrides &schedule,
                            const std::vector<DType> &dtypes,
                            const std::string &shapes) {
  auto created = ops::Operators::create(0, "", schedule);
  if (!created)
    return created.takeStatus();
  ops::Operators &ops = **created;
  Bench bench(ops, iterations);
  std::vector<Result> results;
  std::printf("device: %s (%s, %d SMs), median of %d runs, %s%s\n",
              ops.device().name().c_str(), ops.device().chip().c_str(),
              ops.device().multiprocessors(), iterations.getValue(),
              hostInclusive.getValue() ? "host-inclusive" : "device time",
              ops::describe(schedule).c_str());

  // Here, not in measureCeiling: bench.ahead runs the stream kernel before
  // every later timed call.
  std::unique_ptr<ops::Launcher> launcher;
  Bench aheadBuffers(ops, 1);
  if (rt::Status s =
          measureCeiling(bench, aheadBuffers, launcher, hostInclusive, results);
      !s)
    return s;
  double ceiling = results.front().gbps();
  for (DType dtype : dtypes) {
    if (rt::Status s = measureSwiGLU(bench, dtype, shapes, results); !s)
      return s;
    if (rt::Status s = measureRMSNorm(bench, dtype, shapes, results); !s)
      return s;
  }
  if (rt::Status s = measureSameSize(bench, *launcher, results); !s)
    return s;

  CappedLoads capped = cappedLoads(ops);
  printTable(results, ceiling, capped);
  if (!jsonPath.empty())
    return writeJson(jsonPath, ops, iterations, hostInclusive, results, ceiling,
                     capped);
  return rt::Status::ok();
}
} // namespace

int main(int argc, char **argv) {
  setCommandLine(argc, argv);
  mlir::tile::prepareCommandLine("tile-bench", {&category, &scheduleCategory},
                                 /*readsIR=*/false);
  cl::ParseCommandLineOptions(argc, argv,
                              "Tile's operators in GB/s, next to the "
                              "streaming ceiling measured in the same run\n");
  if (iterations < 1 || mlpIterations < 1 || groupedIterations < 1)
    return fail("--iterations must be at least 1");
  if (groupedCommand) {
    auto created = ops::Operators::create(0, "");
    if (!created)
      return fail(created.message());
    if (groupedStreams < 1)
      return fail("--streams must be at least 1");
    return runGroupedMLPBench(**created, groupedIterations, groupedStreams,
                              groupedJson);
  }
  if (mlpCommand) {
    auto created = ops::Operators::create(0, "");
    if (!created)
      return fail(created.message());
    MLPBenchOptions options;
    options.jsonPath = mlpJson;
    options.iterations = mlpIterations;
    options.maxSequence = maxSequence;
    options.tiled.shards = shards;
    options.tiled.memoryBudgetBytes = size_t(budgetMib) << 20;
    return runMLPBench(**created, options);
  }
  ops::ScheduleOverrides schedule;
  static_cast<ScheduleOptions &>(schedule) = scheduleFlags.get();
  schedule.registerCaps = !noRegisterCaps;
  std::vector<DType> dtypes;
  for (const std::string &name : dtypeNames) {
    std::optional<DType> dtype = rt::dtypeNamed(name);
    if (!dtype)
      return fail("--dtypes: unknown dtype '" + name + "' (bf16, f16, f32)");
    dtypes.push_back(*dtype);
  }
  if (dtypes.empty())
    dtypes = {DType::BF16, DType::F16, DType::F32};
  // ",MxN,...," or empty for every shape
  std::string shapes =
      shapeList.empty() ? "" : "," + llvm::join(shapeList, ",") + ",";
  if (rt::Status s = runOperatorBench(schedule, dtypes, shapes); !s)
    return fail(s.message());
  return 0;
}
