//===- Runtime.cpp - launch Tile's kernels on an NVIDIA GPU --------------===//

#include "tile/Runtime/Runtime.h"
#include "tile/Runtime/HostFloat.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tile::rt {

size_t byteSize(DType dtype) {
  switch (dtype) {
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::I64:
    return 8;
  }
  return 4;
}

const char *name(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::F32:
    return "f32";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

std::optional<DType> dtypeNamed(std::string_view name) {
  for (DType dtype :
       {DType::BF16, DType::F16, DType::F32, DType::I32, DType::I64})
    if (name == rt::name(dtype))
      return dtype;
  return std::nullopt;
}

std::vector<unsigned char> encode(DType dtype,
                                  const std::vector<double> &values) {
  size_t size = byteSize(dtype);
  std::vector<unsigned char> bytes(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::I32 || dtype == DType::I64) {
      int64_t integer = static_cast<int64_t>(values[i]);
      int32_t narrow = static_cast<int32_t>(integer);
      std::memcpy(&bytes[i * size],
                  dtype == DType::I64 ? static_cast<const void *>(&integer)
                                      : static_cast<const void *>(&narrow),
                  size);
      continue;
    }
    float value = static_cast<float>(values[i]);
    if (dtype == DType::F32) {
      std::memcpy(&bytes[i * 4], &value, 4);
    } else {
      uint16_t half = dtype == DType::BF16 ? toBF16(value) : toF16(value);
      std::memcpy(&bytes[i * 2], &half, 2);
    }
  }
  return bytes;
}

std::vector<double> decode(DType dtype, const unsigned char *bytes,
                           size_t count) {
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i) {
    if (dtype == DType::I64) {
      int64_t value;
      std::memcpy(&value, bytes + i * 8, 8);
      values[i] = static_cast<double>(value);
    } else if (dtype == DType::I32) {
      int32_t value;
      std::memcpy(&value, bytes + i * 4, 4);
      values[i] = value;
    } else if (dtype == DType::F32) {
      float value;
      std::memcpy(&value, bytes + i * 4, 4);
      values[i] = value;
    } else {
      uint16_t half;
      std::memcpy(&half, bytes + i * 2, 2);
      values[i] = dtype == DType::BF16 ? fromBF16(half) : fromF16(half);
    }
  }
  return values;
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

StatusOr<Device> Device::open(int ordinal) {
  StatusOr<const DriverApi *> driver = openDriver();
  if (!driver)
    return driver.takeStatus();
  Device device;
  device.api = *driver;
  const DriverApi &api = **driver;
  int count = 0;
  if (Status s = check(api.deviceGetCount(&count), "cuDeviceGetCount"); !s)
    return s;
  if (ordinal < 0 || ordinal >= count)
    return Status::error("no GPU " + std::to_string(ordinal) +
                         ": the driver "
                         "sees " +
                         std::to_string(count) + " device(s)");
  if (Status s = check(api.deviceGet(&device.handle, ordinal), "cuDeviceGet");
      !s)
    return s;
  // 75/76: compute capability major/minor; 16: multiprocessor count.
  int major = 0, minor = 0;
  if (Status s = check(api.deviceGetAttribute(&major, 75, device.handle),
                       "cuDeviceGetAttribute");
      !s)
    return s;
  (void)api.deviceGetAttribute(&minor, 76, device.handle);
  (void)api.deviceGetAttribute(&device.smCount, 16, device.handle);
  // 39, 82, 106, 81, 111: threads, registers, CTAs and shared memory per
  // SM, and the shared memory reserved per CTA. A failed query keeps the
  // default (an H100's figure).
  auto query = [&](int &value, int attribute) {
    int result = 0;
    if (api.deviceGetAttribute(&result, attribute, device.handle) == 0 &&
        result > 0)
      value = result;
  };
  query(device.limits.threads, 39);
  query(device.limits.registers, 82);
  query(device.limits.ctas, 106);
  query(device.limits.sharedBytes, 81);
  query(device.limits.reservedSharedBytes, 111);
  device.capability = major * 10 + minor;
  char text[256] = {0};
  (void)api.deviceGetName(text, sizeof(text) - 1, device.handle);
  device.deviceName = text;
  // The primary context avoids cuCtxCreate, whose signature CUDA 13 changed.
  if (Status s = check(api.primaryCtxRetain(&device.context, device.handle),
                       "cuDevicePrimaryCtxRetain");
      !s)
    return s;
  device.index = ordinal;
  return device;
}

ContextScope::ContextScope(const DriverApi &api, cu::Context context)
    : api(api) {
  entered = check(api.ctxGetCurrent(&previous), "cuCtxGetCurrent");
  if (!entered || previous == context)
    return;
  entered = check(api.ctxSetCurrent(context), "cuCtxSetCurrent");
  switched = static_cast<bool>(entered);
}

ContextScope::~ContextScope() {
  if (switched)
    (void)api.ctxSetCurrent(previous);
}

StatusOr<int> deviceCount() {
  StatusOr<const DriverApi *> api = openDriver();
  if (!api)
    return api.takeStatus();
  int count = 0;
  if (Status s = check((*api)->deviceGetCount(&count), "cuDeviceGetCount"); !s)
    return s;
  return count;
}

std::string Device::chip() const {
  if (capability == 90)
    return "sm_90a";
  return "sm_" + std::to_string(capability);
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

StatusOr<DeviceBuffer> DeviceBuffer::allocate(const Device &device,
                                              size_t bytes) {
  DeviceBuffer buffer;
  buffer.api = &device.driver();
  buffer.context = device.primaryContext();
  buffer.bytes = bytes;
  if (bytes == 0)
    return buffer;
  ContextScope scope(device);
  if (!scope.status())
    return scope.status();
  cu::Result result = buffer.api->memAlloc(&buffer.ptr, bytes);
  if (result == 2)
    return Status::error("out of device memory allocating " +
                         std::to_string(bytes) + " bytes");
  if (Status s = check(result, "cuMemAlloc"); !s)
    return s;
  return buffer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : api(other.api), context(other.context), ptr(other.ptr),
      bytes(other.bytes) {
  other.ptr = 0;
  other.bytes = 0;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    if (ptr) {
      ContextScope scope(*api, context);
      api->memFree(ptr);
    }
    api = other.api;
    context = other.context;
    ptr = other.ptr;
    bytes = other.bytes;
    other.ptr = 0;
    other.bytes = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr) {
    ContextScope scope(*api, context);
    api->memFree(ptr);
  }
}

Status DeviceBuffer::copyFromHost(const void *source, size_t count,
                                  size_t offset) {
  if (offset > bytes || count > bytes - offset)
    return Status::error("copying " + std::to_string(count) +
                         " bytes at offset " + std::to_string(offset) +
                         " into a buffer of " + std::to_string(bytes));
  if (count == 0)
    return Status::ok();
  ContextScope scope(*api, context);
  if (!scope.status())
    return scope.status();
  return check(api->memcpyHtoD(ptr + offset, source, count), "cuMemcpyHtoD");
}

Status DeviceBuffer::copyToHost(void *destination, size_t count) const {
  if (count > bytes)
    return Status::error("copying " + std::to_string(count) +
                         " bytes out of a buffer of " + std::to_string(bytes));
  if (count == 0)
    return Status::ok();
  ContextScope scope(*api, context);
  if (!scope.status())
    return scope.status();
  return check(api->memcpyDtoH(destination, ptr, count), "cuMemcpyDtoH");
}

Status DeviceBuffer::fill(unsigned char byte) {
  if (bytes == 0)
    return Status::ok();
  ContextScope scope(*api, context);
  if (!scope.status())
    return scope.status();
  return check(api->memsetD8(ptr, byte, bytes), "cuMemsetD8");
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

StatusOr<Module> Module::load(const Device &device, const std::string &image,
                              int maxRegisters) {
  Module module;
  module.api = &device.driver();
  module.context = device.primaryContext();
  ContextScope scope(device);
  if (!scope.status())
    return scope.status();
  // The JIT's error log says which PTX line it rejected.
  char log[8192] = {0};
  int options[] = {5 /*CU_JIT_ERROR_LOG_BUFFER*/,
                   6 /*CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES*/,
                   0 /*CU_JIT_MAX_REGISTERS*/};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log) - 1),
                    reinterpret_cast<void *>(static_cast<uintptr_t>(
                        maxRegisters > 0 ? maxRegisters : 0))};
  unsigned count = maxRegisters > 0 ? 3 : 2;
  cu::Result result = module.api->moduleLoadDataEx(
      &module.handle, image.c_str(), count, options, values);
  if (result != 0)
    return Status::error(
        "loading the module failed: " + driverErrorName(result) +
        (log[0] ? std::string(": ") + log : std::string()));
  return module;
}

Module::Module(Module &&other) noexcept
    : api(other.api), context(other.context), handle(other.handle) {
  other.handle = nullptr;
}

Module &Module::operator=(Module &&other) noexcept {
  if (this != &other) {
    if (handle) {
      ContextScope scope(*api, context);
      api->moduleUnload(handle);
    }
    api = other.api;
    context = other.context;
    handle = other.handle;
    other.handle = nullptr;
  }
  return *this;
}

Module::~Module() {
  if (handle) {
    ContextScope scope(*api, context);
    api->moduleUnload(handle);
  }
}

StatusOr<cu::Function> Module::function(const std::string &name) const {
  cu::Function function = nullptr;
  cu::Result result = api->moduleGetFunction(&function, handle, name.c_str());
  if (result == 500)
    return Status::error("the module has no kernel named '" + name + "'");
  if (Status s = check(result, "cuModuleGetFunction"); !s)
    return s;
  return function;
}

StatusOr<FunctionInfo> functionInfo(const Device &device,
                                    cu::Function function) {
  FunctionInfo info;
  const DriverApi &api = device.driver();
  ContextScope scope(device);
  if (!scope.status())
    return scope.status();
  // 4, 1, 3: CU_FUNC_ATTRIBUTE_NUM_REGS, _SHARED_SIZE_BYTES,
  // _LOCAL_SIZE_BYTES.
  for (auto [value, attribute] : {std::pair{&info.resources.registers, 4},
                                  std::pair{&info.resources.sharedBytes, 1},
                                  std::pair{&info.localBytes, 3}})
    if (Status s = check(api.funcGetAttribute(value, attribute, function),
                         "cuFuncGetAttribute");
        !s)
      return s;
  return info;
}

//===----------------------------------------------------------------------===//
// Tensors and launches
//===----------------------------------------------------------------------===//

int64_t TensorView::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

bool TensorView::isContiguous() const {
  if (strides.empty())
    return true;
  if (strides.size() != shape.size())
    return false;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected)
      return false;
    expected *= shape[i];
  }
  return true;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") +
            (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return text + "]";
}

Status checkTensor(const TensorView &view, const std::string &what, DType dtype,
                   const std::vector<int64_t> &shape) {
  if (view.dtype != dtype)
    return Status::error(what + " has dtype " + name(view.dtype) +
                         ", expected " + name(dtype));
  if (view.shape.size() != shape.size())
    return Status::error(what + " has shape " + formatShape(view.shape) +
                         ", expected rank " + std::to_string(shape.size()) +
                         " " + formatShape(shape));
  for (size_t i = 0; i < shape.size(); ++i) {
    if (view.shape[i] < 0)
      return Status::error(what + " has a negative size in " +
                           formatShape(view.shape));
    if (shape[i] >= 0 && view.shape[i] != shape[i])
      return Status::error(what + " has shape " + formatShape(view.shape) +
                           ", expected " + formatShape(shape));
  }
  if (!view.isContiguous())
    return Status::error(what + " is not contiguous; the kernels read dense "
                                "row-major rows");
  if (view.numElements() > 0 && view.data == 0)
    return Status::error(what + " is a null pointer");
  if (view.data % byteSize(dtype) != 0)
    return Status::error(what + " is misaligned: address " +
                         std::to_string(view.data) + " is not a multiple of " +
                         std::to_string(byteSize(dtype)) + " bytes");
  return Status::ok();
}

void KernelArgs::push(const void *value, size_t size) {
  uint64_t slot = 0;
  std::memcpy(&slot, value, size);
  slots.push_back(slot);
}

std::vector<void *> KernelArgs::pointers() {
  std::vector<void *> result;
  for (uint64_t &slot : slots)
    result.push_back(&slot);
  return result;
}

Status launch(const Device &device, cu::Function kernel,
              const LaunchConfig &config, KernelArgs &args) {
  if (config.grid == 0)
    return Status::ok();
  ContextScope scope(device);
  if (!scope.status())
    return scope.status();
  std::vector<void *> params = args.pointers();
  // Programmatic dependent launch exists from compute capability 9.0 on
  // (and cuLaunchKernelEx from CUDA 12.0's driver); otherwise the kernel
  // launches after its predecessor, as always. A cooperative launch has
  // no such fallback: its CTAs wait for each other.
  bool overlap = config.overlapPrevious && device.computeCapability() >= 90;
  if (config.cooperative && !device.driver().launchKernelEx)
    return Status::error("a cooperative launch needs cuLaunchKernelEx (a "
                         "CUDA 12.0 or later driver)");
  if ((overlap || config.cooperative) && device.driver().launchKernelEx) {
    cu::LaunchAttribute attributes[2];
    unsigned count = 0;
    if (overlap) {
      attributes[count].id = cu::kLaunchAttributeProgrammaticSerialization;
      attributes[count++].value.flag = 1;
    }
    if (config.cooperative) {
      attributes[count].id = cu::kLaunchAttributeCooperative;
      attributes[count++].value.flag = 1;
    }
    cu::LaunchConfig ex;
    ex.gridX = config.grid;
    ex.blockX = config.block;
    ex.sharedBytes = config.sharedBytes;
    ex.stream = config.stream;
    ex.attributes = attributes;
    ex.attributeCount = count;
    return check(
        device.driver().launchKernelEx(&ex, kernel, params.data(), nullptr),
        "cuLaunchKernelEx");
  }
  return check(device.driver().launchKernel(
                   kernel, config.grid, 1, 1, config.block, 1, 1,
                   config.sharedBytes, config.stream, params.data(), nullptr),
               "cuLaunchKernel");
}

Status synchronize(const Device &device) {
  ContextScope scope(device);
  if (!scope.status())
    return scope.status();
  return check(device.driver().ctxSynchronize(),
               "the kernel (cuCtxSynchronize)");
}

namespace {
/// (free, total) bytes of the device's memory.
StatusOr<std::pair<size_t, size_t>> memoryInfo(const Device &device) {
  size_t free = 0, total = 0;
  ContextScope scope(device);
  if (!scope.status())
    return scope.status();
  if (Status s =
          check(device.driver().memGetInfo(&free, &total), "cuMemGetInfo");
      !s)
    return s;
  return std::make_pair(free, total);
}
} // namespace

StatusOr<size_t> memoryInUse(const Device &device) {
  auto info = memoryInfo(device);
  if (!info)
    return info.takeStatus();
  return info->second - info->first;
}

StatusOr<size_t> memoryFree(const Device &device) {
  auto info = memoryInfo(device);
  if (!info)
    return info.takeStatus();
  return info->first;
}

StatusOr<EventTimer> EventTimer::create(const Device &device) {
  EventTimer timer;
  timer.api = &device.driver();
  timer.context = device.primaryContext();
  ContextScope scope(device);
  if (!scope.status())
    return scope.status();
  if (Status s =
          check(timer.api->eventCreate(&timer.begin, 0), "cuEventCreate");
      !s)
    return s;
  if (Status s = check(timer.api->eventCreate(&timer.end, 0), "cuEventCreate");
      !s)
    return s;
  return timer;
}

EventTimer::EventTimer(EventTimer &&other) noexcept
    : api(other.api), context(other.context), begin(other.begin),
      end(other.end) {
  other.begin = other.end = nullptr;
}

EventTimer::~EventTimer() {
  if (!begin && !end)
    return;
  ContextScope scope(*api, context);
  if (begin)
    api->eventDestroy(begin);
  if (end)
    api->eventDestroy(end);
}

Status EventTimer::start() {
  ContextScope scope(*api, context);
  if (!scope.status())
    return scope.status();
  return check(api->eventRecord(begin, nullptr), "cuEventRecord");
}

StatusOr<float> EventTimer::stop() {
  ContextScope scope(*api, context);
  if (!scope.status())
    return scope.status();
  if (Status s = check(api->eventRecord(end, nullptr), "cuEventRecord"); !s)
    return s;
  if (Status s = check(api->eventSynchronize(end), "cuEventSynchronize"); !s)
    return s;
  float ms = 0.0f;
  if (Status s =
          check(api->eventElapsedTime(&ms, begin, end), "cuEventElapsedTime");
      !s)
    return s;
  return ms;
}

StatusOr<double> medianMilliseconds(const Device &device, int iterations,
                                    const std::function<Status(int)> &run,
                                    const std::function<Status()> &ahead) {
  auto timer = EventTimer::create(device);
  if (!timer)
    return timer.takeStatus();
  for (int i = 0; i < 5; ++i)
    if (Status s = run(i); !s)
      return s;
  std::vector<double> samples;
  for (int i = 0; i < std::max(1, iterations); ++i) {
    if (ahead)
      if (Status s = ahead(); !s)
        return s;
    if (Status s = timer->start(); !s)
      return s;
    if (Status s = run(i); !s)
      return s;
    auto ms = timer->stop();
    if (!ms)
      return ms.takeStatus();
    samples.push_back(*ms);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

} // namespace tile::rt
