//===- Support.cpp - conversions at the C API's boundary ------------------===//

#include "Support.h"

#include <map>
#include <memory>
#include <mutex>

namespace tile::capi {

using rt::Status;
using rt::StatusOr;

tile_status toC(const Status &status) {
  if (status)
    return nullptr;
  return new tile_status_t{status.message()};
}

tile_status error(std::string message) {
  return new tile_status_t{std::move(message)};
}

StatusOr<rt::DType> deviceDType(tile_dtype dtype, const std::string &what) {
  switch (dtype) {
  case TILE_DTYPE_BF16:
    return rt::DType::BF16;
  case TILE_DTYPE_F16:
    return rt::DType::F16;
  case TILE_DTYPE_F32:
    return rt::DType::F32;
  case TILE_DTYPE_I32:
    return rt::DType::I32;
  case TILE_DTYPE_I64:
    return rt::DType::I64;
  default:
    return Status::error(what + " has dtype " + std::to_string(int(dtype)) +
                         ": a GPU tensor is bf16, f16 or f32 (i32 or i64 "
                         "for a kernel's integer data)");
  }
}

StatusOr<rt::TensorView> toView(const tile_tensor *tensor,
                                const std::string &what) {
  if (!tensor)
    return Status::error(what + " is missing (a null tile_tensor)");
  if (tensor->rank < 0 || tensor->rank > 64 ||
      (tensor->rank > 0 && !tensor->shape))
    return Status::error(what + " has rank " + std::to_string(tensor->rank) +
                         (tensor->rank > 0 ? " but no shape" : ""));
  StatusOr<rt::DType> dtype = deviceDType(tensor->dtype, what);
  if (!dtype)
    return dtype.takeStatus();
  rt::TensorView view;
  view.data = reinterpret_cast<rt::cu::DevicePtr>(tensor->data);
  view.dtype = *dtype;
  view.shape.assign(tensor->shape, tensor->shape + tensor->rank);
  if (tensor->strides)
    view.strides.assign(tensor->strides, tensor->strides + tensor->rank);
  return view;
}

StatusOr<std::vector<ops::Argument>>
toArguments(const tile_value *args, size_t count, const std::string &function) {
  if (count > 0 && !args)
    return Status::error(function + ": the arguments are a null pointer");
  std::vector<ops::Argument> arguments;
  arguments.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    std::string what = function + " argument #" + std::to_string(i);
    switch (args[i].kind) {
    case TILE_VALUE_TENSOR: {
      StatusOr<rt::TensorView> view = toView(&args[i].tensor, what);
      if (!view)
        return view.takeStatus();
      arguments.emplace_back(std::move(*view));
      break;
    }
    case TILE_VALUE_FLOAT:
      arguments.emplace_back(static_cast<float>(args[i].scalar));
      break;
    case TILE_VALUE_INT:
      arguments.emplace_back(args[i].integer);
      break;
    default:
      return Status::error(what + " has the unknown kind " +
                           std::to_string(int(args[i].kind)));
    }
  }
  return arguments;
}

StatusOr<std::vector<rt::TensorView>>
toViews(std::initializer_list<std::pair<const char *, const tile_tensor *>>
            tensors) {
  std::vector<rt::TensorView> views;
  for (auto [name, tensor] : tensors) {
    StatusOr<rt::TensorView> view = toView(tensor, name);
    if (!view)
      return view.takeStatus();
    views.push_back(std::move(*view));
  }
  return views;
}

ops::RunOptions toRun(const tile_run *run) {
  ops::RunOptions options;
  if (!run)
    return options;
  options.stream = static_cast<rt::cu::Stream>(run->stream);
  options.workspace = reinterpret_cast<rt::cu::DevicePtr>(run->workspace);
  options.workspaceBytes = run->workspace_bytes;
  options.callerWorkspace = run->workspace != nullptr;
  options.scratch = reinterpret_cast<rt::cu::DevicePtr>(run->scratch);
  options.scratchBytes = run->scratch_bytes;
  return options;
}

StatusOr<const rt::Device *> device(int ordinal) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<rt::Device>> devices;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = devices.find(ordinal); it != devices.end())
    return it->second.get();
  StatusOr<rt::Device> opened = rt::Device::open(ordinal);
  if (!opened)
    return opened.takeStatus();
  auto &slot = devices[ordinal];
  slot = std::make_unique<rt::Device>(std::move(*opened));
  return slot.get();
}

} // namespace tile::capi

extern "C" {

int tile_api_version(void) { return TILE_C_API_VERSION; }

const char *tile_status_message(tile_status status) {
  return status ? status->message.c_str() : "success";
}

void tile_status_destroy(tile_status status) { delete status; }

tile_status tile_device_count(int *count) {
  if (!count)
    return tile::capi::error("tile_device_count: count is a null pointer");
  tile::rt::StatusOr<int> devices = tile::rt::deviceCount();
  if (!devices)
    return tile::capi::toC(devices.takeStatus());
  *count = *devices;
  return nullptr;
}

tile_status tile_device_chip(int ordinal, char *buffer, size_t size) {
  auto opened = tile::capi::device(ordinal);
  if (!opened)
    return tile::capi::toC(opened.takeStatus());
  std::string chip = (*opened)->chip();
  if (!buffer || size <= chip.size())
    return tile::capi::error("tile_device_chip: the buffer cannot hold '" +
                             chip + "'");
  chip.copy(buffer, chip.size());
  buffer[chip.size()] = '\0';
  return nullptr;
}

tile_status tile_device_describe(int ordinal,
                                 tile_device_description *description) {
  if (!description)
    return tile::capi::error(
        "tile_device_describe: the description is a null pointer");
  auto opened = tile::capi::device(ordinal);
  if (!opened)
    return tile::capi::toC(opened.takeStatus());
  tile::DeviceDescription facts = (*opened)->description();
  *description = {facts.sms, facts.threadsPerSm, facts.registersPerSm,
                  facts.sharedBytesPerSm};
  return nullptr;
}

} // extern "C"
