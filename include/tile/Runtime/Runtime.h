//===- Runtime.h - launch Tile's kernels on an NVIDIA GPU -------*- C++ -*-===//
//
// `tile::rt` depends on libc and libdl only: no MLIR, no LLVM, no link-time
// libcuda (the driver is opened at run time, Driver.h). It owns device
// memory (RAII), loads PTX into modules through the driver's JIT, checks
// tensors against what a kernel expects, and launches on a stream. Every
// failure is a returned Status with a message.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_RUNTIME_RUNTIME_H
#define TILE_RUNTIME_RUNTIME_H

#include "tile/Runtime/Driver.h"
#include "tile/Runtime/Occupancy.h"
#include "tile/Target/DeviceDescription.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tile::rt {

/// Storage types of device tensors: the floats kernels compute on, and the
/// integer data (labels) they read.
enum class DType { BF16, F16, F32, I32, I64 };

size_t byteSize(DType dtype);
const char *name(DType dtype);
/// The dtype `name()` spells so ("bf16", "f16", "f32", "i32", "i64"), or
/// nothing.
std::optional<DType> dtypeNamed(std::string_view name);
/// Whether kernels compute on `dtype` (bf16, f16, f32), not integer data.
inline bool isFloat(DType dtype) {
  return dtype == DType::BF16 || dtype == DType::F16 || dtype == DType::F32;
}
/// `values` as a `dtype` buffer holds them (bf16 and f16 rounded to nearest
/// even, as the GPU's cvt.rn; integers truncated toward zero), and `count`
/// elements of such a buffer back.
std::vector<unsigned char> encode(DType dtype,
                                  const std::vector<double> &values);
std::vector<double> decode(DType dtype, const unsigned char *bytes,
                           size_t count);

/// A device and its primary context. Nothing here leaves that context
/// current: every call that needs it (allocate, load, launch, copy, ...)
/// enters it for its own duration through a ContextScope.
class Device {
public:
  static StatusOr<Device> open(int ordinal = 0);

  const DriverApi &driver() const { return *api; }
  /// major * 10 + minor, e.g. 90 for an H100.
  int computeCapability() const { return capability; }
  int multiprocessors() const { return smCount; }
  const std::string &name() const { return deviceName; }
  /// "sm_90a" on compute capability 9.0, "sm_80" on 8.x, ...
  std::string chip() const;
  /// What one SM holds (threads, registers, CTAs, shared memory).
  const SmLimits &smLimits() const { return limits; }
  /// The figures the compiler schedules for (jit::CompileOptions::device).
  DeviceDescription description() const {
    return {smCount, limits.threads, limits.registers, limits.sharedBytes};
  }
  int ordinal() const { return index; }
  cu::Context primaryContext() const { return context; }

private:
  const DriverApi *api = nullptr;
  cu::Device handle = 0;
  cu::Context context = nullptr;
  int index = 0;
  int capability = 0, smCount = 0;
  SmLimits limits;
  std::string deviceName;
};

/// Makes a device's primary context current on the calling thread for one
/// scope and restores the caller's at its end. A framework's current device
/// (torch.cuda.current_device()) is the thread's current context: a call on
/// another device must run in that device's context (modules, memory and
/// launches belong to one) and must leave the caller's as it found it.
class ContextScope {
public:
  ContextScope(const DriverApi &api, cu::Context context);
  explicit ContextScope(const Device &device)
      : ContextScope(device.driver(), device.primaryContext()) {}
  ~ContextScope();
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

  /// Whether the context is current (else the driver's reason).
  const Status &status() const { return entered; }

private:
  const DriverApi &api;
  cu::Context previous = nullptr;
  bool switched = false;
  Status entered = Status::ok();
};

/// How many devices the driver sees (an error where there is no driver).
StatusOr<int> deviceCount();

/// Device memory, freed on destruction.
class DeviceBuffer {
public:
  static StatusOr<DeviceBuffer> allocate(const Device &device, size_t bytes);
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  cu::DevicePtr data() const { return ptr; }
  size_t size() const { return bytes; }
  /// Copies `count` bytes to `offset` bytes into the buffer.
  Status copyFromHost(const void *source, size_t count, size_t offset = 0);
  Status copyToHost(void *destination, size_t count) const;
  /// Sets every byte (0xFF poisons floats with NaN).
  Status fill(unsigned char byte);

private:
  const DriverApi *api = nullptr;
  cu::Context context = nullptr;
  cu::DevicePtr ptr = 0;
  size_t bytes = 0;
};

/// A loaded module: PTX compiled by the driver's JIT, or a cubin.
class Module {
public:
  /// Compiles `image` (PTX text or cubin); a PTX error returns the JIT log.
  /// A nonzero `maxRegisters` caps every kernel's registers per thread
  /// (CU_JIT_MAX_REGISTERS): where that is too few, the JIT spills.
  static StatusOr<Module> load(const Device &device, const std::string &image,
                               int maxRegisters = 0);
  Module() = default;
  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;
  ~Module();

  StatusOr<cu::Function> function(const std::string &name) const;

private:
  const DriverApi *api = nullptr;
  cu::Context context = nullptr;
  cu::Module handle = nullptr;
};

/// What the driver's JIT made of a kernel: its registers and shared
/// memory, and the local memory a thread uses (nonzero: it spills, as
/// Tile's kernels have no local arrays).
struct FunctionInfo {
  KernelResources resources;
  int localBytes = 0;
};
StatusOr<FunctionInfo> functionInfo(const Device &device,
                                    cu::Function function);

/// A tensor in device memory: pointer, shape, strides (in elements; empty
/// means contiguous row-major) and dtype.
struct TensorView {
  cu::DevicePtr data = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DType dtype = DType::F32;

  int64_t numElements() const;
  bool isContiguous() const;
};

/// A shape as messages write it: [7, 13], with ? for a negative (unknown)
/// size.
std::string formatShape(const std::vector<int64_t> &shape);

/// Checks `view` (called `what` in messages) against a kernel's
/// expectation: dtype, rank, the sizes given (-1: any), contiguous rows,
/// and a non-null pointer aligned to its element size.
Status checkTensor(const TensorView &view, const std::string &what, DType dtype,
                   const std::vector<int64_t> &shape);

/// Kernel arguments in launch order: each stored in its own 8-byte slot.
class KernelArgs {
public:
  void pointer(cu::DevicePtr value) { push(&value, sizeof(value)); }
  void index(int64_t value) { push(&value, sizeof(value)); }
  void f32(float value) { push(&value, sizeof(value)); }
  void i32(int32_t value) { push(&value, sizeof(value)); }
  std::vector<void *> pointers();
  size_t size() const { return slots.size(); }
  /// Replaces argument `index` with a pointer (the launcher's workspace).
  void setPointer(size_t index, cu::DevicePtr value) { slots[index] = value; }

private:
  void push(const void *value, size_t size);
  std::vector<uint64_t> slots;
};

struct LaunchConfig {
  unsigned grid = 1;
  unsigned block = 256;
  unsigned sharedBytes = 0;
  cu::Stream stream = nullptr;
  /// Programmatic dependent launch: the kernel's CTAs may start while the
  /// previous kernel in the stream finishes (once all of that kernel's CTAs
  /// have run `griddepcontrol.launch_dependents` or exited). Only for a
  /// kernel that runs `griddepcontrol.wait` before it touches memory the
  /// previous kernel writes: the wait returns once that kernel is complete
  /// and its writes are visible.
  bool overlapPrevious = false;
  /// A cooperative launch: the driver places every CTA of the grid at once
  /// (or fails the launch), so CTAs may wait for each other.
  bool cooperative = false;
};

/// Launches `kernel`; a zero grid launches nothing (an empty tensor).
Status launch(const Device &device, cu::Function kernel,
              const LaunchConfig &config, KernelArgs &args);

/// Waits for the device; reports any error a kernel raised.
Status synchronize(const Device &device);

/// Device memory in use now (total − free, from cuMemGetInfo), in bytes:
/// what a benchmark subtracts to find an operator's extra memory.
StatusOr<size_t> memoryInUse(const Device &device);
/// Free device memory, in bytes: what a benchmark checks before it
/// allocates.
StatusOr<size_t> memoryFree(const Device &device);

/// A pair of CUDA events on the default stream: GPU time between start()
/// and stop(), in milliseconds.
class EventTimer {
public:
  static StatusOr<EventTimer> create(const Device &device);
  EventTimer() = default;
  EventTimer(EventTimer &&other) noexcept;
  EventTimer &operator=(EventTimer &&other) = delete;
  EventTimer(const EventTimer &) = delete;
  ~EventTimer();

  Status start();
  StatusOr<float> stop();

private:
  const DriverApi *api = nullptr;
  cu::Context context = nullptr;
  cu::Event begin = nullptr, end = nullptr;
};

/// The median milliseconds of `run(i)` over `iterations` timed calls
/// (i = 0, 1, ...; after five untimed ones), each timed by events on the
/// device's stream. `ahead`, when given, is queued before each timed call:
/// work that keeps the GPU busy while the host enqueues the call, so that
/// the call's host cost does not count (device time).
StatusOr<double> medianMilliseconds(const Device &device, int iterations,
                                    const std::function<Status(int)> &run,
                                    const std::function<Status()> &ahead = {});

} // namespace tile::rt

#endif // TILE_RUNTIME_RUNTIME_H
