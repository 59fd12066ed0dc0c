//===- MLPBench.cpp - tile-bench mlp: tiled vs untiled SwiGLU MLP step ---===//
//
// One training step (forward + backward, main_grad accumulated) of the
// SwiGLU MLP at hidden 4096, intermediate 12288, bf16, for sequences 2048 …
// 131072: the untiled step (the forward keeps g, u and h; nothing is
// recomputed) against the tiled one (automatic shards), both through the
// same cuBLASLt GEMMs and the same derived SwiGLU kernels.
//
// Time: CUDA events around forward + backward, after one warm-up step each;
// the untiled and tiled steps alternate (same clocks, same temperature) and
// each reports its median (alternatingMedians, BenchTool.h). Extra memory:
// device memory in use after an operator's first step (cuMemGetInfo) minus
// before the operator was created, with x, dy, y, dx, the weights and main_grad
// already allocated — the operator allocates one workspace and keeps it, so
// this is its peak. A step whose workspace does not fit in free memory is
// reported as skipped.
//
//   tile-bench mlp [--json=FILE] [--iterations=N] [--max-sequence=S]
//                  [--shards=N] [--budget-mib=N]
//
// --json: one result row per sequence and step ("case" "untiled" or
// "tiled"), in the envelope of benchmarks/README.md.
//
//===----------------------------------------------------------------------===//

#include "BenchTool.h"

#include "tile/Ops/TiledMLP.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace tile;
using rt::DType;

namespace {
constexpr int64_t kHidden = 4096, kIntermediate = 12288;
constexpr double kMiB = 1024.0 * 1024.0;

struct Step {
  bool ran = false;
  std::string skipped; // why not, when it did not run
  double ms = 0, extraMiB = 0, workspaceMiB = 0;
  int64_t shards = 0;
};

struct Row {
  int64_t sequence;
  Step untiled, tiled;
};

class MLPBench {
public:
  MLPBench(ops::Operators &ops, int iterations)
      : ops(ops), iterations(iterations) {}

  rt::Status allocate(rt::DeviceBuffer &into, size_t bytes) {
    auto buffer = rt::DeviceBuffer::allocate(ops.device(), bytes);
    if (!buffer)
      return buffer.takeStatus();
    into = std::move(*buffer);
    return rt::Status::ok();
  }

  rt::TensorView view(const rt::DeviceBuffer &buffer,
                      std::vector<int64_t> shape, DType dtype) {
    rt::TensorView v;
    v.data = buffer.data();
    v.shape = std::move(shape);
    v.dtype = dtype;
    return v;
  }

  /// Sets up the weights and main_grad, once.
  rt::Status prepareWeights() {
    size_t weightBytes = size_t(kIntermediate) * kHidden * 2;
    for (rt::DeviceBuffer *w : {&gateUp, &down})
      if (rt::Status s = allocate(*w, (w == &gateUp ? 2 : 1) * weightBytes); !s)
        return s;
    if (rt::Status s = fillRandom(gateUp, 0.015f, 1); !s)
      return s;
    if (rt::Status s = fillRandom(down, 0.009f, 2); !s)
      return s;
    for (rt::DeviceBuffer *g : {&gradGateUp, &gradDown})
      if (rt::Status s =
              allocate(*g, (g == &gradGateUp ? 2 : 1) * weightBytes * 2);
          !s)
        return s;
    (void)gradGateUp.fill(0);
    (void)gradDown.fill(0);
    auto w = ops::MLPWeights::fused(
        view(gateUp, {2 * kIntermediate, kHidden}, DType::BF16),
        view(down, {kHidden, kIntermediate}, DType::BF16));
    auto g = ops::MLPGradients::fused(
        view(gradGateUp, {2 * kIntermediate, kHidden}, DType::F32),
        view(gradDown, {kHidden, kIntermediate}, DType::F32));
    if (!w || !g)
      return !w ? w.takeStatus() : g.takeStatus();
    weights = *w;
    grads = *g;
    return rt::Status::ok();
  }

  /// One sequence length: both steps.
  rt::StatusOr<Row> run(int64_t S, const ops::MLPOptions &tiledOptions) {
    Row row{S, {}, {}};
    size_t activationBytes = size_t(S) * kHidden * 2;
    rt::DeviceBuffer x, dy, y, dx;
    for (rt::DeviceBuffer *b : {&x, &dy, &y, &dx})
      if (rt::Status s = allocate(*b, activationBytes); !s)
        return s;
    if (rt::Status s = fillRandom(x, 1.0f, 3); !s)
      return s;
    if (rt::Status s = fillRandom(dy, 0.01f, 4); !s)
      return s;
    io = {view(x, {S, kHidden}, DType::BF16),
          view(dy, {S, kHidden}, DType::BF16),
          view(y, {S, kHidden}, DType::BF16),
          view(dx, {S, kHidden}, DType::BF16)};

    ops::MLPOptions untiledOptions;
    untiledOptions.recompute = false;
    // Memory first, one operator at a time: each one's extra memory is what
    // is in use after its first step minus what was in use before it
    // existed. Then the two steps alternate, so that both are timed at the
    // same clocks and temperature.
    auto untiled = create(S, untiledOptions, row.untiled);
    if (!untiled)
      return untiled.takeStatus();
    auto tiled = create(S, tiledOptions, row.tiled);
    if (!tiled)
      return tiled.takeStatus();
    std::vector<std::function<rt::Status()>> steps(2);
    for (int which = 0; which < 2; ++which)
      if (ops::TiledSwiGLUMLP *mlp = which ? tiled->get() : untiled->get())
        steps[which] = [this, mlp] { return step(*mlp); };
    auto medians = alternatingMedians(ops.device(), iterations, steps);
    if (!medians)
      return medians.takeStatus();
    row.untiled.ms = (*medians)[0].value_or(0);
    row.tiled.ms = (*medians)[1].value_or(0);
    return row;
  }

private:
  rt::Status step(ops::TiledSwiGLUMLP &mlp) {
    if (rt::Status s = mlp.forward(weights, io[0], io[2]); !s)
      return s;
    return mlp.backward(weights, io[0], io[1], io[3], grads,
                        /*overwrite=*/false);
  }

  /// The operator for `options` after one (warm-up) step, and its extra
  /// memory into `record`; null when its workspace does not fit.
  rt::StatusOr<std::unique_ptr<ops::TiledSwiGLUMLP>>
  create(int64_t S, const ops::MLPOptions &options, Step &record) {
    auto plan = ops::planShards(S, kIntermediate, DType::BF16, options);
    if (!plan)
      return plan.takeStatus();
    auto available = rt::memoryFree(ops.device());
    if (!available)
      return available.takeStatus();
    size_t free = *available;
    // Leave room for cuBLASLt and the context's own growth.
    if (plan->workspaceBytes() + (size_t(1) << 30) > free) {
      record.skipped =
          "needs " + std::to_string(int64_t(plan->workspaceBytes() / kMiB)) +
          " MiB, " + std::to_string(int64_t(free / kMiB)) + " MiB free";
      return std::unique_ptr<ops::TiledSwiGLUMLP>();
    }
    auto before = rt::memoryInUse(ops.device());
    if (!before)
      return before.takeStatus();
    auto mlp = ops::TiledSwiGLUMLP::create(ops, options);
    if (!mlp)
      return mlp.takeStatus();
    if (rt::Status s = step(**mlp); !s)
      return s;
    if (rt::Status s = rt::synchronize(ops.device()); !s)
      return s;
    auto after = rt::memoryInUse(ops.device());
    if (!after)
      return after.takeStatus();
    record.ran = true;
    record.extraMiB = (double(*after) - double(*before)) / kMiB;
    record.workspaceMiB = (*mlp)->workspaceBytes() / kMiB;
    record.shards = (*mlp)->lastPlan().shards;
    return std::move(*mlp);
  }

  ops::Operators &ops;
  int iterations;
  rt::DeviceBuffer gateUp, down, gradGateUp, gradDown;
  ops::MLPWeights weights;
  ops::MLPGradients grads;
  std::vector<rt::TensorView> io; // x, dy, y, dx
};

/// The rows as JSON, into `path`: one result row per sequence and step.
rt::Status writeJson(const std::string &path, ops::Operators &ops,
                     const MLPBenchOptions &options,
                     const std::vector<Row> &rows) {
  BenchReport report;
  report.benchmark = "tile-bench mlp";
  report.device = ops.device().name();
  report.settings = {
      {"hidden", kHidden},
      {"intermediate", kIntermediate},
      {"dtype", "bf16"},
      {"iterations", options.iterations},
      {"max_sequence", options.maxSequence},
      {"shards", options.tiled.shards},
      {"budget_mib", int64_t(options.tiled.memoryBudgetBytes >> 20)}};
  for (const Row &r : rows)
    for (const Step *s : {&r.untiled, &r.tiled}) {
      JsonFields row = {{"case", s == &r.untiled ? "untiled" : "tiled"},
                        {"sequence", r.sequence},
                        {"ran", s->ran}};
      row.emplace_back("ms", s->ran ? llvm::json::Value(s->ms) : nullptr);
      row.emplace_back("extra_mib", s->extraMiB);
      row.emplace_back("workspace_mib", s->workspaceMiB);
      row.emplace_back("shards", s->shards);
      row.emplace_back("skipped", s->skipped);
      report.results.push_back(std::move(row));
    }
  return writeReport(path, report);
}

std::string cell(const Step &step, double value, const char *format) {
  if (!step.ran)
    return "-";
  char text[32];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}
} // namespace

int runMLPBench(ops::Operators &ops, const MLPBenchOptions &options) {
  const std::string &jsonPath = options.jsonPath;
  int iterations = options.iterations;
  int64_t maxSequence = options.maxSequence;
  const ops::MLPOptions &tiled = options.tiled;
  MLPBench bench(ops, iterations);
  if (rt::Status s = bench.prepareWeights(); !s)
    return fail(s.message());
  std::printf("device: %s (%s), SwiGLU MLP H=%lld I=%lld bf16, forward + "
              "backward, median of %d steps; tiled: %s\n",
              ops.device().name().c_str(), ops.device().chip().c_str(),
              (long long)kHidden, (long long)kIntermediate, iterations,
              tiled.shards
                  ? (std::to_string(tiled.shards) + " shards").c_str()
                  : ("automatic shards, budget " +
                     std::to_string(tiled.memoryBudgetBytes >> 20) + " MiB")
                        .c_str());
  std::vector<Row> rows;
  for (int64_t S = 2048; S <= maxSequence; S *= 2) {
    auto row = bench.run(S, tiled);
    if (!row)
      return fail("sequence " + std::to_string(S) + ": " + row.message());
    rows.push_back(*row);
    std::fflush(stdout);
  }
  std::printf("\n%9s | %11s %13s | %11s %13s %7s | %10s %12s\n", "sequence",
              "untiled ms", "untiled MiB", "tiled ms", "tiled MiB", "shards",
              "time ratio", "memory ratio");
  for (const Row &r : rows) {
    bool both = r.untiled.ran && r.tiled.ran;
    std::printf(
        "%9lld | %11s %13s | %11s %13s %7s | %10s %12s\n",
        (long long)r.sequence, cell(r.untiled, r.untiled.ms, "%.2f").c_str(),
        cell(r.untiled, r.untiled.extraMiB, "%.0f").c_str(),
        cell(r.tiled, r.tiled.ms, "%.2f").c_str(),
        cell(r.tiled, r.tiled.extraMiB, "%.0f").c_str(),
        cell(r.tiled, double(r.tiled.shards), "%.0f").c_str(),
        both ? cell(r.tiled, r.tiled.ms / r.untiled.ms, "%.3f").c_str() : "-",
        both ? cell(r.tiled, r.tiled.extraMiB / r.untiled.extraMiB, "%.3f")
                   .c_str()
             : "-");
    for (const Step *s : {&r.untiled, &r.tiled})
      if (!s->ran)
        std::printf("          (%s step skipped: %s)\n",
                    s == &r.untiled ? "untiled" : "tiled", s->skipped.c_str());
  }
  if (!jsonPath.empty())
    if (rt::Status s = writeJson(jsonPath, ops, options, rows); !s)
      return fail(s.message());
  return 0;
}
