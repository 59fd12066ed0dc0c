//===- Driver.cpp - the CUDA driver API, opened at run time --------------===//

#include "tile/Runtime/Driver.h"

#include "Symbols.h"
#include <cstdlib>

namespace tile::rt {

std::string driverErrorName(cu::Result code) {
  const char *name = nullptr;
  switch (code) {
  case 0:
    name = "CUDA_SUCCESS";
    break;
  case 1:
    name = "CUDA_ERROR_INVALID_VALUE";
    break;
  case 2:
    name = "CUDA_ERROR_OUT_OF_MEMORY";
    break;
  case 3:
    name = "CUDA_ERROR_NOT_INITIALIZED";
    break;
  case 4:
    name = "CUDA_ERROR_DEINITIALIZED";
    break;
  case 34:
    name = "CUDA_ERROR_STUB_LIBRARY";
    break;
  case 35:
    name = "CUDA_ERROR_INSUFFICIENT_DRIVER";
    break;
  case 100:
    name = "CUDA_ERROR_NO_DEVICE";
    break;
  case 101:
    name = "CUDA_ERROR_INVALID_DEVICE";
    break;
  case 200:
    name = "CUDA_ERROR_INVALID_IMAGE";
    break;
  case 201:
    name = "CUDA_ERROR_INVALID_CONTEXT";
    break;
  case 209:
    name = "CUDA_ERROR_NO_BINARY_FOR_GPU";
    break;
  case 218:
    name = "CUDA_ERROR_INVALID_PTX";
    break;
  case 221:
    name = "CUDA_ERROR_JIT_COMPILER_NOT_FOUND";
    break;
  case 222:
    name = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    break;
  case 400:
    name = "CUDA_ERROR_INVALID_HANDLE";
    break;
  case 500:
    name = "CUDA_ERROR_NOT_FOUND";
    break;
  case 700:
    name = "CUDA_ERROR_ILLEGAL_ADDRESS";
    break;
  case 701:
    name = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    break;
  case 710:
    // A kernel's device-side assert (the grouped GEMM's check of device
    // splits): the driver wrote its message to stderr.
    name = "CUDA_ERROR_ASSERT, a device-side assert (its message is on "
           "stderr)";
    break;
  case 716:
    name = "CUDA_ERROR_MISALIGNED_ADDRESS";
    break;
  case 719:
    name = "CUDA_ERROR_LAUNCH_FAILED";
    break;
  case 803:
    name = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    break;
  default:
    name = "CUDA error";
    break;
  }
  return std::string(name) + " (" + std::to_string(code) + ")";
}

Status check(cu::Result result, const char *what) {
  if (result == 0)
    return Status::ok();
  return Status::error(std::string(what) +
                       " failed: " + driverErrorName(result));
}

namespace {

StatusOr<DriverApi> load(const char *path) {
  StatusOr<void *> opened = openLibrary(
      path, "CUDA driver",
      "install the NVIDIA driver or set TILE_LIBCUDA to libcuda's path");
  if (!opened)
    return opened.takeStatus();
  void *library = *opened;
  DriverApi api{};
  std::string missing;
  resolveSymbol(library, "cuInit", api.init, missing);
  resolveSymbol(library, "cuDeviceGetCount", api.deviceGetCount, missing);
  resolveSymbol(library, "cuDeviceGet", api.deviceGet, missing);
  resolveSymbol(library, "cuDeviceGetAttribute", api.deviceGetAttribute,
                missing);
  resolveSymbol(library, "cuDeviceGetName", api.deviceGetName, missing);
  resolveSymbol(library, "cuDevicePrimaryCtxRetain", api.primaryCtxRetain,
                missing);
  resolveSymbol(library, "cuDevicePrimaryCtxRelease_v2", api.primaryCtxRelease,
                missing);
  resolveSymbol(library, "cuCtxSetCurrent", api.ctxSetCurrent, missing);
  resolveSymbol(library, "cuCtxGetCurrent", api.ctxGetCurrent, missing);
  resolveSymbol(library, "cuCtxSynchronize", api.ctxSynchronize, missing);
  resolveSymbol(library, "cuMemAlloc_v2", api.memAlloc, missing);
  resolveSymbol(library, "cuMemFree_v2", api.memFree, missing);
  resolveSymbol(library, "cuMemGetInfo_v2", api.memGetInfo, missing);
  resolveSymbol(library, "cuMemcpyHtoD_v2", api.memcpyHtoD, missing);
  resolveSymbol(library, "cuMemcpyDtoH_v2", api.memcpyDtoH, missing);
  resolveSymbol(library, "cuMemsetD8_v2", api.memsetD8, missing);
  resolveSymbol(library, "cuMemsetD8Async", api.memsetD8Async, missing);
  resolveSymbol(library, "cuModuleLoadDataEx", api.moduleLoadDataEx, missing);
  resolveSymbol(library, "cuModuleUnload", api.moduleUnload, missing);
  resolveSymbol(library, "cuModuleGetFunction", api.moduleGetFunction, missing);
  resolveSymbol(library, "cuFuncGetAttribute", api.funcGetAttribute, missing);
  resolveSymbol(library, "cuLaunchKernel", api.launchKernel, missing);
  // Optional (drivers from CUDA 12.0 on): without it a kernel that could
  // overlap its predecessor is launched plainly.
  std::string optional;
  resolveSymbol(library, "cuLaunchKernelEx", api.launchKernelEx, optional);
  resolveSymbol(library, "cuStreamSynchronize", api.streamSynchronize, missing);
  resolveSymbol(library, "cuGetErrorName", api.getErrorName, missing);
  resolveSymbol(library, "cuEventCreate", api.eventCreate, missing);
  resolveSymbol(library, "cuEventRecord", api.eventRecord, missing);
  resolveSymbol(library, "cuEventSynchronize", api.eventSynchronize, missing);
  resolveSymbol(library, "cuEventElapsedTime", api.eventElapsedTime, missing);
  resolveSymbol(library, "cuEventDestroy_v2", api.eventDestroy, missing);
  resolveSymbol(library, "cuStreamCreate", api.streamCreate, missing);
  resolveSymbol(library, "cuStreamDestroy_v2", api.streamDestroy, missing);
  resolveSymbol(library, "cuStreamWaitEvent", api.streamWaitEvent, missing);
  if (!missing.empty())
    return Status::error(std::string("the CUDA driver at ") + path + " lacks " +
                         missing + "; the driver is too old");
  cu::Result init = api.init(0);
  if (init == 34)
    return Status::error(
        std::string("no CUDA driver: ") + path +
        " is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), "
        "not a driver; this machine has no usable GPU driver");
  if (init == 100)
    return Status::error("no GPU: the CUDA driver finds no device "
                         "(CUDA_ERROR_NO_DEVICE)");
  if (Status status = check(init, "cuInit"); !status)
    return status;
  int count = 0;
  if (Status status = check(api.deviceGetCount(&count), "cuDeviceGetCount");
      !status)
    return status;
  if (count == 0)
    return Status::error("no GPU: the CUDA driver finds no device");
  return api;
}
} // namespace

StatusOr<DriverApi> loadDriver(const char *path) { return load(path); }

StatusOr<const DriverApi *> openDriver() {
  // Opened once; the result, success or the reason for failure, is kept.
  static StatusOr<DriverApi> driver = [] {
    const char *override = std::getenv("TILE_LIBCUDA");
    return load(override && *override ? override : "libcuda.so.1");
  }();
  if (!driver)
    return Status::error(driver.message());
  return &*driver;
}

} // namespace tile::rt
