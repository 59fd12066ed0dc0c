//===- Version.cpp - Tile's version, git revision and LLVM ---------------===//

#include "tile/Version/Version.h"

#include "Version.inc" // TILE_GIT_REVISION, rewritten at build time

const char *tile::version() { return TILE_VERSION; }

const char *tile::gitRevision() { return TILE_GIT_REVISION; }

const char *tile::llvmVersion() { return TILE_LLVM_VERSION; }

std::string tile::versionText(const std::string &tool) {
  return tool + " (Tile " + version() + ", git " + gitRevision() +
         ")\n  built with LLVM " + llvmVersion() + "\n";
}
