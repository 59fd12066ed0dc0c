//===- GroupedMLPBench.cpp - tile-bench grouped-mlp: the MoE MLP's step ---===//
//
// One training step (forward + backward, weight gradients accumulated into
// fp32 main_grad) of the grouped SwiGLU MLP at H = 4096, bf16, for E ∈
// {8, 64} experts, I ∈ {1536, 14336}, T ∈ {16384, 65536} tokens, with
// balanced splits (T/E each) and skewed ones (expert e's share ∝ 1/(e+1),
// in whole 16-row blocks; the smallest shares are empty experts) — the
// shapes of benchmarks/grouped_mlp.py, which adds PyTorch's
// implementations in the same run. Tiled (automatic shards) and untiled
// steps alternate; each reports the median of its CUDA-event times
// (alternatingMedians, BenchTool.h) and the device memory its operator
// added (its workspace). A shape whose weights, main_grad and activations
// do not fit is skipped, with the reason.
//
//   tile-bench grouped-mlp [--iterations=N] [--streams=N] [--json=FILE]
//
// --json: one result row per shape and step ("case" "tiled" or "untiled"),
// in the envelope of benchmarks/README.md.
//
// --streams is MLPOptions::streams (the GEMM streams the experts spread
// over; 1: all on one stream).
//
//===----------------------------------------------------------------------===//

#include "BenchTool.h"

#include "tile/Ops/GroupedMLP.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace tile;
using rt::DType;

namespace {
constexpr int64_t kHidden = 4096;
constexpr double kMiB = 1024.0 * 1024.0;

std::vector<int64_t> splitCounts(int64_t tokens, int64_t experts, bool skewed) {
  std::vector<int64_t> counts(experts, tokens / experts);
  if (skewed) {
    double total = 0;
    for (int64_t e = 0; e < experts; ++e)
      total += 1.0 / double(e + 1);
    for (int64_t e = 0; e < experts; ++e)
      counts[e] = int64_t(double(tokens) / double(e + 1) / total) / 16 * 16;
  }
  int64_t sum = 0;
  for (int64_t c : counts)
    sum += c;
  counts[0] += tokens - sum;
  return counts;
}

struct Result {
  int64_t experts, intermediate, tokens;
  bool skewed;
  int64_t empty = 0;
  std::string skipped;
  double tiledMs = 0, untiledMs = 0, tiledMiB = 0, untiledMiB = 0;
};

rt::StatusOr<rt::DeviceBuffer> allocate(ops::Operators &ops, size_t bytes) {
  return rt::DeviceBuffer::allocate(ops.device(), bytes);
}

rt::TensorView view(const rt::DeviceBuffer &buffer, std::vector<int64_t> shape,
                    DType dtype) {
  rt::TensorView v;
  v.data = buffer.data();
  v.shape = std::move(shape);
  v.dtype = dtype;
  return v;
}

/// Every buffer of one shape.
struct Buffers {
  rt::DeviceBuffer gateUp, down, gradGateUp, gradDown, x, dy, y, dx;
};

rt::Status measure(ops::Operators &ops, int iterations, int streams,
                   Result &result) {
  int64_t E = result.experts, I = result.intermediate, T = result.tokens;
  size_t weightBytes = size_t(E) * I * kHidden * 2;
  size_t activationBytes = size_t(T) * kHidden * 2;
  // Weights (gate/up and down: 3 per expert's I·H) in bf16, main_grad in
  // fp32, and x, dy, y, dx.
  size_t need = 3 * weightBytes + 6 * weightBytes + 4 * activationBytes;
  auto available = rt::memoryFree(ops.device());
  if (!available)
    return available.takeStatus();
  size_t free = *available;
  if (need + (size_t(4) << 30) > free) {
    result.skipped = "needs " + std::to_string(int64_t(need / kMiB)) +
                     " MiB of weights, main_grad and activations, " +
                     std::to_string(int64_t(free / kMiB)) + " MiB free";
    return rt::Status::ok();
  }
  Buffers b;
  std::vector<std::pair<rt::DeviceBuffer *, size_t>> sizes = {
      {&b.gateUp, 2 * weightBytes},     {&b.down, weightBytes},
      {&b.gradGateUp, 4 * weightBytes}, {&b.gradDown, 2 * weightBytes},
      {&b.x, activationBytes},          {&b.dy, activationBytes},
      {&b.y, activationBytes},          {&b.dx, activationBytes}};
  for (auto [buffer, bytes] : sizes) {
    auto made = allocate(ops, bytes);
    if (!made)
      return made.takeStatus();
    *buffer = std::move(*made);
  }
  for (auto [buffer, scale, seed] : {std::tuple{&b.gateUp, 0.015f, 1u},
                                     {&b.down, 0.02f, 2u},
                                     {&b.x, 1.0f, 3u},
                                     {&b.dy, 0.01f, 4u}})
    if (rt::Status s = fillRandom(*buffer, scale, seed); !s)
      return s;
  (void)b.gradGateUp.fill(0);
  (void)b.gradDown.fill(0);
  auto weights = ops::GroupedMLPWeights::fusedStacked(
      view(b.gateUp, {E, 2 * I, kHidden}, DType::BF16),
      view(b.down, {E, kHidden, I}, DType::BF16));
  auto grads = ops::GroupedMLPGradients::fusedStacked(
      view(b.gradGateUp, {E, 2 * I, kHidden}, DType::F32),
      view(b.gradDown, {E, kHidden, I}, DType::F32));
  if (!weights || !grads)
    return !weights ? weights.takeStatus() : grads.takeStatus();
  rt::TensorView x = view(b.x, {T, kHidden}, DType::BF16),
                 dy = view(b.dy, {T, kHidden}, DType::BF16),
                 y = view(b.y, {T, kHidden}, DType::BF16),
                 dx = view(b.dx, {T, kHidden}, DType::BF16);
  std::vector<int64_t> splits = splitCounts(T, E, result.skewed);
  result.empty = std::count(splits.begin(), splits.end(), int64_t(0));

  ops::MLPOptions tiledOptions, untiledOptions;
  untiledOptions.recompute = false;
  tiledOptions.streams = untiledOptions.streams = streams;
  std::unique_ptr<ops::GroupedSwiGLUMLP> mlps[2];
  double *mib[2] = {&result.tiledMiB, &result.untiledMiB};
  auto step = [&](ops::GroupedSwiGLUMLP &mlp) {
    if (rt::Status s = mlp.forward(*weights, x, splits, y); !s)
      return s;
    return mlp.backward(*weights, x, splits, dy, dx, *grads, false);
  };
  // Memory first, one operator at a time (its workspace after one step);
  // then the two alternate, at the same clocks and temperature.
  for (int which = 0; which < 2; ++which) {
    auto before = rt::memoryInUse(ops.device());
    if (!before)
      return before.takeStatus();
    auto mlp = ops::GroupedSwiGLUMLP::create(ops, which ? untiledOptions
                                                        : tiledOptions);
    if (!mlp)
      return mlp.takeStatus();
    rt::Status ran = step(**mlp);
    if (!ran && which == 1) {
      // The untiled step keeps [T, I] three times over: it may not fit.
      result.untiledMs = -1;
      (void)rt::synchronize(ops.device());
      continue;
    }
    if (!ran)
      return ran;
    if (rt::Status s = rt::synchronize(ops.device()); !s)
      return s;
    auto after = rt::memoryInUse(ops.device());
    if (!after)
      return after.takeStatus();
    *mib[which] = (double(*after) - double(*before)) / kMiB;
    mlps[which] = std::move(*mlp);
  }
  std::vector<std::function<rt::Status()>> steps(2);
  for (int which = 0; which < 2; ++which)
    if (ops::GroupedSwiGLUMLP *mlp = mlps[which].get())
      steps[which] = [&step, mlp] { return step(*mlp); };
  auto medians = alternatingMedians(ops.device(), iterations, steps);
  if (!medians)
    return medians.takeStatus();
  double *ms[2] = {&result.tiledMs, &result.untiledMs};
  for (int which = 0; which < 2; ++which)
    if ((*medians)[which])
      *ms[which] = *(*medians)[which];
  return rt::Status::ok();
}

/// The results as JSON, into `path`: one result row per shape and step.
rt::Status writeJson(const std::string &path, ops::Operators &ops,
                     int iterations, int streams,
                     const std::vector<Result> &results) {
  BenchReport report;
  report.benchmark = "tile-bench grouped-mlp";
  report.device = ops.device().name();
  report.settings = {{"hidden", kHidden},
                     {"dtype", "bf16"},
                     {"iterations", iterations},
                     {"streams", streams}};
  for (const Result &r : results)
    for (bool tiled : {true, false}) {
      double ms = tiled ? r.tiledMs : r.untiledMs;
      // Not run: the shape was skipped, or the untiled step did not fit.
      std::string skipped = !r.skipped.empty() ? r.skipped
                            : ms < 0           ? "does not fit"
                                               : "";
      JsonFields row = {{"case", tiled ? "tiled" : "untiled"},
                        {"experts", r.experts},
                        {"intermediate", r.intermediate},
                        {"tokens", r.tokens},
                        {"skewed", r.skewed},
                        {"splits", r.skewed ? "skewed" : "balanced"},
                        {"empty_experts", r.empty},
                        {"ran", skipped.empty()}};
      row.emplace_back("ms", skipped.empty() ? llvm::json::Value(ms) : nullptr);
      row.emplace_back("extra_mib", tiled ? r.tiledMiB : r.untiledMiB);
      row.emplace_back("skipped", skipped);
      report.results.push_back(std::move(row));
    }
  return writeReport(path, report);
}
} // namespace

int runGroupedMLPBench(ops::Operators &ops, int iterations, int streams,
                       const std::string &jsonPath) {
  std::printf("device: %s (%s), grouped SwiGLU MLP H=%lld bf16, forward + "
              "backward into fp32 main_grad, median of %d steps, %d GEMM "
              "streams\n",
              ops.device().name().c_str(), ops.device().chip().c_str(),
              (long long)kHidden, iterations, streams);
  std::printf("%4s %6s %6s %9s %6s | %10s %10s | %11s %11s\n", "E", "I", "T",
              "splits", "empty", "tiled ms", "tiled MiB", "untiled ms",
              "untiled MiB");
  std::vector<Result> results;
  for (int64_t E : {8, 64})
    for (int64_t I : {1536, 14336})
      for (int64_t T : {16384, 65536})
        for (bool skewed : {false, true}) {
          Result r{E, I, T, skewed};
          if (rt::Status s = measure(ops, iterations, streams, r); !s)
            return fail("E=" + std::to_string(E) + " I=" + std::to_string(I) +
                        " T=" + std::to_string(T) + ": " + s.message());
          const char *kind = skewed ? "skewed" : "balanced";
          if (!r.skipped.empty()) {
            std::printf("%4lld %6lld %6lld %9s: skipped (%s)\n", (long long)E,
                        (long long)I, (long long)T, kind, r.skipped.c_str());
          } else {
            char untiled[64] = "does not fit";
            if (r.untiledMs >= 0)
              std::snprintf(untiled, sizeof(untiled), "%11.2f %11.0f",
                            r.untiledMs, r.untiledMiB);
            std::printf("%4lld %6lld %6lld %9s %6lld | %10.2f %10.0f | %s\n",
                        (long long)E, (long long)I, (long long)T, kind,
                        (long long)r.empty, r.tiledMs, r.tiledMiB, untiled);
          }
          std::fflush(stdout);
          results.push_back(r);
        }
  if (!jsonPath.empty())
    if (rt::Status s = writeJson(jsonPath, ops, iterations, streams, results);
        !s)
      return fail(s.message());
  return 0;
}
