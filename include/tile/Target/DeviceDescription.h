//===- DeviceDescription.h - the GPU a kernel is scheduled for --*- C++ -*-===//
//
// The facts of one GPU that tile-schedule sizes grids by. Plain C++ (no MLIR,
// no driver): the compiler reads it as tile-schedule's options (tile-opt
// --tile-schedule="sms=114", whose defaults are these), the JIT as
// CompileOptions::device, filled from the device it compiles for
// (CompileOptions::forDevice, rt::Device::description()), and the C API as
// tile_compile_options.device.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TARGET_DEVICEDESCRIPTION_H
#define TILE_TARGET_DEVICEDESCRIPTION_H

#include <cstdint>
#include <string>

namespace tile {

struct DeviceDescription {
  /// The defaults are an H100 SXM's and an H200's (132 SMs); an H100 PCIe
  /// has 114, an A100 108, an H20 78.
  int64_t sms = 132;
  int64_t threadsPerSm = 2048;
  int64_t registersPerSm = 65536;
  /// Shared memory one SM holds, in bytes (228 KiB on sm_90).
  int64_t sharedBytesPerSm = 233472;

  /// "132 SMs, 2048 threads, 65536 registers, 233472 shared bytes per SM",
  /// for cache keys and messages.
  std::string str() const {
    return std::to_string(sms) + " SMs, " + std::to_string(threadsPerSm) +
           " threads, " + std::to_string(registersPerSm) + " registers, " +
           std::to_string(sharedBytesPerSm) + " shared bytes per SM";
  }
};

} // namespace tile

#endif // TILE_TARGET_DEVICEDESCRIPTION_H
