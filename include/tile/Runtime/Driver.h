//===- Driver.h - the CUDA driver API, opened at run time -------*- C++ -*-===//
//
// The runtime never links libcuda: it opens `libcuda.so.1` (or the library
// named by TILE_LIBCUDA) with dlopen and resolves the versioned entry points
// it needs, so a program built with it runs, and reports clearly, on a
// machine without a GPU. The types are declared here rather than taken from
// cuda.h, so building needs no CUDA toolkit either.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_RUNTIME_DRIVER_H
#define TILE_RUNTIME_DRIVER_H

#include "tile/Runtime/Status.h"

#include <cstddef>
#include <cstdint>

namespace tile::rt {

namespace cu {
using Result = int;
using Device = int;
using DevicePtr = unsigned long long;
using Context = struct CUctx_st *;
using Module = struct CUmod_st *;
using Function = struct CUfunc_st *;
using Stream = struct CUstream_st *;
using Event = struct CUevent_st *;

/// cuLaunchKernelEx's attribute (CUlaunchAttribute: a 4-byte id padded to
/// 8, then a 64-byte union of values) and configuration (CUlaunchConfig).
struct LaunchAttribute {
  int id = 0;
  char pad[4] = {};
  union {
    char bytes[64];
    int flag;
  } value = {};
};
static_assert(sizeof(LaunchAttribute) == 72, "CUlaunchAttribute's layout");

/// CU_LAUNCH_ATTRIBUTE_COOPERATIVE and
/// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
constexpr int kLaunchAttributeCooperative = 2;
constexpr int kLaunchAttributeProgrammaticSerialization = 6;

struct LaunchConfig {
  unsigned gridX = 1, gridY = 1, gridZ = 1;
  unsigned blockX = 1, blockY = 1, blockZ = 1;
  unsigned sharedBytes = 0;
  Stream stream = nullptr;
  LaunchAttribute *attributes = nullptr;
  unsigned attributeCount = 0;
};
static_assert(sizeof(LaunchConfig) == 56, "CUlaunchConfig's layout");
} // namespace cu

/// The driver entry points the runtime uses.
struct DriverApi {
  cu::Result (*init)(unsigned);
  cu::Result (*deviceGetCount)(int *);
  cu::Result (*deviceGet)(cu::Device *, int);
  cu::Result (*deviceGetAttribute)(int *, int, cu::Device);
  cu::Result (*deviceGetName)(char *, int, cu::Device);
  cu::Result (*primaryCtxRetain)(cu::Context *, cu::Device);
  cu::Result (*primaryCtxRelease)(cu::Device);
  cu::Result (*ctxSetCurrent)(cu::Context);
  cu::Result (*ctxGetCurrent)(cu::Context *);
  cu::Result (*ctxSynchronize)();
  cu::Result (*memAlloc)(cu::DevicePtr *, size_t);
  cu::Result (*memFree)(cu::DevicePtr);
  cu::Result (*memGetInfo)(size_t *, size_t *);
  cu::Result (*memcpyHtoD)(cu::DevicePtr, const void *, size_t);
  cu::Result (*memcpyDtoH)(void *, cu::DevicePtr, size_t);
  cu::Result (*memsetD8)(cu::DevicePtr, unsigned char, size_t);
  cu::Result (*memsetD8Async)(cu::DevicePtr, unsigned char, size_t, cu::Stream);
  cu::Result (*moduleLoadDataEx)(cu::Module *, const void *, unsigned, int *,
                                 void **);
  cu::Result (*moduleUnload)(cu::Module);
  cu::Result (*moduleGetFunction)(cu::Function *, cu::Module, const char *);
  cu::Result (*funcGetAttribute)(int *, int, cu::Function);
  cu::Result (*launchKernel)(cu::Function, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, cu::Stream,
                             void **, void **);
  /// Null where the driver predates it (CUDA 12.0).
  cu::Result (*launchKernelEx)(const cu::LaunchConfig *, cu::Function, void **,
                               void **);
  cu::Result (*streamSynchronize)(cu::Stream);
  cu::Result (*getErrorName)(cu::Result, const char **);
  cu::Result (*eventCreate)(cu::Event *, unsigned);
  cu::Result (*eventRecord)(cu::Event, cu::Stream);
  cu::Result (*eventSynchronize)(cu::Event);
  cu::Result (*eventElapsedTime)(float *, cu::Event, cu::Event);
  cu::Result (*eventDestroy)(cu::Event);
  cu::Result (*streamCreate)(cu::Stream *, unsigned);
  cu::Result (*streamDestroy)(cu::Stream);
  cu::Result (*streamWaitEvent)(cu::Stream, cu::Event, unsigned);
};

/// The name of a driver error code, e.g. "CUDA_ERROR_STUB_LIBRARY (34)".
/// The common codes are known without asking the driver (the stub library
/// names none of them).
std::string driverErrorName(cu::Result code);

/// Opens the driver library at `path`, resolves the entry points and calls
/// cuInit. Errors say whether the library is missing, is the toolkit's stub,
/// is too old, or finds no device.
StatusOr<DriverApi> loadDriver(const char *path);

/// loadDriver of TILE_LIBCUDA, else libcuda.so.1, once per process.
StatusOr<const DriverApi *> openDriver();

/// Turns a driver result into a Status: `what` failed: NAME.
Status check(cu::Result result, const char *what);

} // namespace tile::rt

#endif // TILE_RUNTIME_DRIVER_H
