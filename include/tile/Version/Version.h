//===- Version.h - Tile's version, git revision and LLVM -------*- C++ -*-===//
//
// What `--version` prints in every tool. No LLVM: the runtime-only tools
// (tile-rt-info) use it too.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_VERSION_VERSION_H
#define TILE_VERSION_VERSION_H

#include <string>

namespace tile {

/// The release, e.g. "0.1.0": CMake's project() version (pyproject.toml
/// and tile.__version__ repeat it; a Python test keeps them equal).
const char *version();

/// `git describe` of the sources built, e.g. "474f867e08c1-dirty", or
/// "unknown" outside a git checkout.
const char *gitRevision();

/// The LLVM/MLIR release the build used, e.g. "22.1.8".
const char *llvmVersion();

/// "<tool> (Tile 0.1.0, git 474f867e08c1)\n  built with LLVM 22.1.8\n".
std::string versionText(const std::string &tool);

} // namespace tile

#endif // TILE_VERSION_VERSION_H
