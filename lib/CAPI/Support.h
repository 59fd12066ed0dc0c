//===- Support.h - conversions at the C API's boundary ----------*- C++ -*-===//
//
// What every C entry point needs: turning a Status into a tile_status, and
// the C structs into the runtime's types (checked: a C caller can pass any
// bits).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_CAPI_SUPPORT_H
#define TILE_LIB_CAPI_SUPPORT_H

#include "tile-c/Tile.h"
#include "tile/Launcher/Launcher.h"
#include "tile/Runtime/Runtime.h"

#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>

struct tile_status_t {
  std::string message;
};

namespace tile::ops {
class Operators;
}
namespace tile::rt {
class Blas;
}
struct tile_operators_t {
  std::unique_ptr<tile::ops::Operators> operators;
  // cuBLASLt for tile_matmul, opened on its first call, and the workspace
  // kept for calls that bring none.
  std::mutex blasMutex;
  std::unique_ptr<tile::rt::Blas> blas;
  tile::rt::DeviceBuffer blasWorkspace;
  ~tile_operators_t();
};

namespace tile::capi {

/// NULL for success; else a status the caller destroys.
tile_status toC(const rt::Status &status);
tile_status error(std::string message);

/// The device dtype of `dtype` (bf16, f16, f32); an error for the host-only
/// ones.
rt::StatusOr<rt::DType> deviceDType(tile_dtype dtype, const std::string &what);

/// A device tensor as the runtime takes it; `what` names it in errors.
rt::StatusOr<rt::TensorView> toView(const tile_tensor *tensor,
                                    const std::string &what);

/// The named tensors as views, in order; the first failure is the error.
rt::StatusOr<std::vector<rt::TensorView>>
toViews(std::initializer_list<std::pair<const char *, const tile_tensor *>>
            tensors);

/// Where a call runs: its stream, and the caller's workspace where it gave
/// one (NULL `run`: the default stream, the callee's own workspace).
ops::RunOptions toRun(const tile_run *run);

/// The call's arguments (tensors as device views; their pointers are
/// checked where they launch).
rt::StatusOr<std::vector<ops::Argument>>
toArguments(const tile_value *args, size_t count, const std::string &function);

/// The device `ordinal`, opened once per process (the launchers keep
/// pointers to it).
rt::StatusOr<const rt::Device *> device(int ordinal);

} // namespace tile::capi

#endif // TILE_LIB_CAPI_SUPPORT_H
