//===- CompiledKernels.h - what the JIT hands the launcher ------*- C++ -*-===//
//
// Plain data, apart from the JIT, so that a program that launches prebuilt
// kernels (Tile::Launcher) includes no compiler header.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_JIT_COMPILEDKERNELS_H
#define TILE_JIT_COMPILEDKERNELS_H

#include <string>

namespace tile::jit {

struct CompiledKernels {
  /// Empty when compiled without a chip.
  std::string ptx;
  /// tile-translate --tile-manifest's JSON for the compiled kernels.
  std::string manifest;
  /// tile-translate --tile-kernel-signature's JSON for the same kernels.
  std::string signature;
  /// The tile IR the kernels were lowered from: derived, specialized to the
  /// dtype (what the reference evaluator runs).
  std::string ir;
  /// The cache key (hex), for logs and tests.
  std::string key;
};

} // namespace tile::jit

#endif // TILE_JIT_COMPILEDKERNELS_H
