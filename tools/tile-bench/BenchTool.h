//===- BenchTool.h - what tile-bench's three benchmarks share ---*- C++ -*-===//
//
// tile-bench.cpp runs the operator benchmarks and dispatches `tile-bench mlp`
// to MLPBench.cpp and `tile-bench grouped-mlp` to GroupedMLPBench.cpp. All
// three write their JSON through writeReport (the envelope every benchmark
// of the project writes: benchmarks/README.md, "Results"); the two MLP
// benchmarks time their steps through alternatingMedians.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_TILE_BENCH_BENCHTOOL_H
#define TILE_TOOLS_TILE_BENCH_BENCHTOOL_H

#include "tile/Ops/Ops.h"
#include "tile/Ops/TiledMLP.h"

#include "llvm/Support/JSON.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

/// Prints "error: <message>" to stderr; returns the exit status 1.
int fail(const std::string &message);

/// `tile-bench mlp`'s options (parsed in tile-bench.cpp).
struct MLPBenchOptions {
  std::string jsonPath;
  int iterations = 5;
  int64_t maxSequence = 131072;
  tile::ops::MLPOptions tiled;
};

/// `tile-bench mlp`: the tiled MLP next to the untiled one.
int runMLPBench(tile::ops::Operators &ops, const MLPBenchOptions &options);

/// `tile-bench grouped-mlp`: the grouped MLP's step (GroupedMLPBench.cpp).
int runGroupedMLPBench(tile::ops::Operators &ops, int iterations, int streams,
                       const std::string &jsonPath);

/// Fills `buffer` with bf16 values uniform in [-scale, scale] (a random
/// 16 MiB block, repeated): realistic bit patterns, as GEMM clocks depend
/// on them.
tile::rt::Status fillRandom(tile::rt::DeviceBuffer &buffer, float scale,
                            unsigned seed);

/// The median milliseconds of each of `steps` over `iterations` rounds in
/// which the steps take turns (so that all run at the same clocks and
/// temperature), each call timed alone by CUDA events on the device's
/// stream; the median of an even count is the upper middle sample, as in
/// rt::medianMilliseconds. No warm-up: each step has run before. An empty
/// step is not run and has no median.
tile::rt::StatusOr<std::vector<std::optional<double>>>
alternatingMedians(const tile::rt::Device &device, int iterations,
                   const std::vector<std::function<tile::rt::Status()>> &steps);

/// JSON fields in the order they are written.
using JsonFields = std::vector<std::pair<std::string, llvm::json::Value>>;

/// One benchmark's results, schema tile-benchmark/1: writeReport adds the
/// date, the revision and the command line.
struct BenchReport {
  std::string benchmark; ///< "tile-bench", "tile-bench mlp", ...
  std::string device;
  JsonFields settings;
  std::vector<JsonFields> results; ///< one row per case, "case" first
  JsonFields extra;                ///< what is not a case (may be empty)
};

/// Remembers the command line for writeReport (main calls it first).
void setCommandLine(int argc, char **argv);

/// Writes `report` as JSON into `path`.
tile::rt::Status writeReport(const std::string &path,
                             const BenchReport &report);

#endif // TILE_TOOLS_TILE_BENCH_BENCHTOOL_H
