//===- Inputs.h - seeded inputs and result summaries ------------*- C++ -*-===//
//
// What a user needs to run a kernel without writing C++: arguments made from
// a short spec ("7x13" for a tensor, "1e-6" for a scalar) filled with seeded
// random values, and a summary of each result that is cheap to compare.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_INTERP_INPUTS_H
#define TILE_INTERP_INPUTS_H

#include "tile/Interp/Evaluator.h"

#include <string>

namespace tile::interp {

/// A small, portable generator (splitmix64): the same seed gives the same
/// inputs on every machine and standard library.
class Random {
public:
  explicit Random(uint64_t seed) : state(seed) {}
  uint64_t next();
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi);

private:
  uint64_t state;
};

struct InputOptions {
  uint64_t seed = 0;
  double low = -2.0;
  double high = 2.0;
};

/// Builds one Buffer per argument of `func` from `specs` (one per argument):
/// tensors get the given shape ("7x13", "4096", "" for rank 0) filled with
/// uniform random values; scalars get the given value.
llvm::Expected<std::vector<Buffer>>
makeInputs(mlir::func::FuncOp func, const std::vector<std::string> &specs,
           const InputOptions &options);

/// Parses "7x13" into {7, 13}.
llvm::Expected<std::vector<int64_t>> parseShape(llvm::StringRef text);

/// {7, 13} as "7x13": parseShape's inverse, for messages and specs.
std::string shapeSpec(llvm::ArrayRef<int64_t> shape);

/// Seeded random cotangents, one per result, shaped and rounded like it,
/// uniform in [-1, 1): what tile-run feeds a derived backward.
std::vector<Buffer> makeCotangents(const std::vector<Buffer> &results,
                                   uint64_t seed);

struct Summary {
  int64_t count = 0;
  int64_t nonFinite = 0;
  double min = 0, max = 0, mean = 0, l2 = 0;
  /// FNV-1a over the bits of every value: equal iff bitwise equal (w.h.p.).
  uint64_t checksum = 0;
};
Summary summarize(const Buffer &buffer);

} // namespace tile::interp

#endif // TILE_INTERP_INPUTS_H
