//===- tile-rt-info.cpp - what the runtime sees on this machine ----------===//
//
// Prints the driver's state and the device the runtime would use, or the
// reason there is none; exit status 1 without a usable GPU. Links the
// runtime only: no MLIR, no LLVM, no libcuda (test/Runtime checks).
//
//===----------------------------------------------------------------------===//

#include "tile/Runtime/Runtime.h"
#include "tile/Version/Version.h"

#include <cstdio>
#include <cstring>

namespace {
// No LLVM here, so no llvm::cl: the tool takes no options but these two.
constexpr const char *kHelp =
    "OVERVIEW: what Tile's runtime sees on this machine: the CUDA driver, "
    "GPU 0 and the chip the JIT compiles for; exit status 1 without a "
    "usable GPU\n\n"
    "USAGE: tile-rt-info [options]\n\n"
    "OPTIONS:\n"
    "  --help     - Display this text\n"
    "  --version  - Display the version of this program\n\n"
    "ENVIRONMENT:\n"
    "  TILE_LIBCUDA  - the path of libcuda.so.1, where the loader does not "
    "find it\n";
} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-help") ||
        !std::strcmp(argv[i], "-h")) {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (!std::strcmp(argv[i], "--version") ||
        !std::strcmp(argv[i], "-version")) {
      std::fputs(tile::versionText("tile-rt-info").c_str(), stdout);
      return 0;
    }
    std::fprintf(stderr,
                 "error: unknown option '%s' (tile-rt-info takes --help and "
                 "--version only)\n",
                 argv[i]);
    return 2;
  }
  tile::rt::StatusOr<tile::rt::Device> device = tile::rt::Device::open();
  if (!device) {
    std::fprintf(stderr, "error: %s\n", device.message().c_str());
    return 1;
  }
  std::printf("device: %s\ncompute capability: %d.%d\nmultiprocessors: %d\n"
              "target chip: %s\n",
              device->name().c_str(), device->computeCapability() / 10,
              device->computeCapability() % 10, device->multiprocessors(),
              device->chip().c_str());
  return 0;
}
