//===- BenchTool.h - what tile-bench's two halves share ---------*- C++ -*-===//
//
// tile-bench.cpp runs the operator benchmarks and dispatches `tile-bench mlp`
// to MLPBench.cpp and `tile-bench grouped-mlp` to GroupedMLPBench.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_TILE_BENCH_BENCHTOOL_H
#define TILE_TOOLS_TILE_BENCH_BENCHTOOL_H

#include "tile/Ops/Ops.h"
#include "tile/Ops/TiledMLP.h"

#include <string>
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

#endif // TILE_TOOLS_TILE_BENCH_BENCHTOOL_H
