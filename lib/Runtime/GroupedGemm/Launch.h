//===- Launch.h - what GroupedGemm.cpp hands the CUDA side ------*- C++ -*-===//
//
// The checked description of one grouped GEMM call, in plain C++: the CUDA
// translation units (one per form, each instantiating one CUTLASS kernel)
// include this and CUTLASS; GroupedGemm.cpp includes this and neither.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_RUNTIME_GROUPEDGEMM_LAUNCH_H
#define TILE_RUNTIME_GROUPEDGEMM_LAUNCH_H

#include "tile/Runtime/Status.h"

#include <cstddef>
#include <cstdint>

namespace tile::rt::grouped {

enum class Form { Project, Back, Weights };

/// A token-row operand (`step` = the token row its data starts at) or a
/// per-expert one (`step` = elements between experts).
struct Operand {
  unsigned long long data = 0;
  int64_t ld = 0;
  int64_t step = 0;
};

/// The most host counts a launch carries in its setup kernel's parameters.
constexpr int kMaxExperts = 1024;

/// What the setup kernel reads to make the groups' tables (its parameters
/// hold it by value, with the host counts).
struct Groups {
  Form form = Form::Project;
  int experts = 0, projections = 0;
  /// Device counts (countBytes 4 or 8), or the launch's host counts.
  unsigned long long deviceCounts = 0;
  int countBytes = 8;
  int64_t rows = 0, windowBegin = 0, windowEnd = 0;
  /// The fixed sizes: project and back take n and k (m is the expert's
  /// rows), weights takes m and n (k is).
  int64_t m = 0, n = 0, k = 0;
  Operand a[2], b[2], d[2];
  bool overwrite = false;
};

struct Launch {
  Groups groups;
  const int64_t *hostCounts = nullptr;
  float beta = 0;
  unsigned long long scratch = 0;
  size_t scratchBytes = 0;
  int smCount = 0;
  void *stream = nullptr;
};

Status launchProject(const Launch &launch);
Status launchBack(const Launch &launch);
Status launchWeights(const Launch &launch);
Status launchWeightsBf16(const Launch &launch);
size_t scratchProject(int groups, int smCount);
size_t scratchBack(int groups, int smCount);
size_t scratchWeights(int groups, int smCount);
size_t scratchWeightsBf16(int groups, int smCount);

} // namespace tile::rt::grouped

#endif // TILE_RUNTIME_GROUPEDGEMM_LAUNCH_H
