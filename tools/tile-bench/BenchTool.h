//===- BenchTool.h - what tile-bench's two halves share ---------*- C++ -*-===//
//
// tile-bench.cpp runs the operator benchmarks and dispatches `tile-bench mlp`
// to MLPBench.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_TILE_BENCH_BENCHTOOL_H
#define TILE_TOOLS_TILE_BENCH_BENCHTOOL_H

#include "tile/Ops/Ops.h"

#include <string>
#include <vector>

/// Prints "error: <message>" to stderr; returns the exit status 1.
int fail(const std::string &message);

/// `tile-bench mlp <args>`: the tiled MLP next to the untiled one.
int runMLPBench(tile::ops::Operators &ops,
                const std::vector<std::string> &args);

#endif // TILE_TOOLS_TILE_BENCH_BENCHTOOL_H
