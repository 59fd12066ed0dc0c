//===- ManifestFormat.h - the kernel manifest's version ---------*- C++ -*-===//
//
// The manifest (tile-translate --tile-manifest, jit::CompiledKernels) is
// written by the compiler (lib/Conversion/TileToGPU/Manifest.cpp) and read by
// the launcher (lib/Launcher/ManifestReader.cpp), which refuses any other
// version. Bump it with any change to what a field means or which fields
// exist; docs/Runtime.md describes the format.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TARGET_MANIFESTFORMAT_H
#define TILE_TARGET_MANIFESTFORMAT_H

namespace tile {
inline constexpr int kManifestFormatVersion = 1;
} // namespace tile

#endif // TILE_TARGET_MANIFESTFORMAT_H
