//===- DeviceDescription.h - the GPU a kernel is scheduled for --*- C++ -*-===//
//
// The facts of one GPU that tile-schedule sizes grids by (DeviceFacts.def,
// their one list). Plain C++ (no MLIR, no driver): the compiler reads it as
// tile-schedule's options (tile-opt --tile-schedule="sms=114", whose
// defaults are these), the JIT as
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
#define TILE_DEVICE_FACT(MEMBER, FLAG, DEFAULT, DESCRIPTION)                   \
  int64_t MEMBER = DEFAULT;
#include "tile/Target/DeviceFacts.def"

  /// The facts as tile-schedule's options spell them ("sms=132
  /// threads-per-sm=2048 ..."): the JIT's pipeline (and so its cache key)
  /// and messages.
  std::string str() const {
    std::string text;
#define TILE_DEVICE_FACT(MEMBER, FLAG, DEFAULT, DESCRIPTION)                   \
  text += (text.empty() ? "" : " ") + std::string(FLAG) + "=" +                \
          std::to_string(MEMBER);
#include "tile/Target/DeviceFacts.def"
    return text;
  }
};

/// How many facts DeviceFacts.def lists (what a copy of them, such as the
/// C API's struct, must hold).
constexpr int kDeviceFacts = 0
#define TILE_DEVICE_FACT(MEMBER, FLAG, DEFAULT, DESCRIPTION) +1
#include "tile/Target/DeviceFacts.def"
    ;

} // namespace tile

#endif // TILE_TARGET_DEVICEDESCRIPTION_H
