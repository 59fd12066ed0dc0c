//===- tile-rt-info.cpp - what the runtime sees on this machine ----------===//
//
// Prints the driver's state and the device the runtime would use, or the
// reason there is none; exit status 1 without a usable GPU. Links the
// runtime only: no MLIR, no LLVM, no libcuda (test/Runtime checks).
//
//===----------------------------------------------------------------------===//

#include "tile/Runtime/Runtime.h"

#include <cstdio>

int main() {
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
