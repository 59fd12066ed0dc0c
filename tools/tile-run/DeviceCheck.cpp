//===- DeviceCheck.cpp - tile-run --device: the GPU against the evaluator -===//

#include "DeviceCheck.h"

#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/Interp/Inputs.h"
#include "tile/JIT/JIT.h"
#include "tile/Ops/Launcher.h"
#include "tile/Runtime/Runtime.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

using namespace tile;
using mlir::func::FuncOp;

namespace {

/// The GPU dtype of a storage type; nothing for f64 (no GPU kernel stores
/// it).
std::optional<rt::DType> deviceType(interp::StorageType storage) {
  switch (storage) {
  case interp::StorageType::BF16:
    return rt::DType::BF16;
  case interp::StorageType::F16:
    return rt::DType::F16;
  case interp::StorageType::F32:
    return rt::DType::F32;
  case interp::StorageType::F64:
    return std::nullopt;
  }
  return std::nullopt;
}

/// A tensor on the device and its host copy's shape and dtype.
struct DeviceTensor {
  rt::DeviceBuffer buffer;
  rt::TensorView view;
};

/// A device buffer of `host`'s dtype and shape: its values, or (poisoned)
/// all-ones bytes, a NaN in bf16, f16 and f32, so that an element the kernel
/// does not write fails the comparison.
rt::StatusOr<DeviceTensor> upload(const rt::Device &device,
                                  const interp::Buffer &host,
                                  const std::string &what,
                                  bool poisoned = false) {
  std::optional<rt::DType> dtype = deviceType(host.storage);
  if (!dtype)
    return rt::Status::error(what + " is not bf16, f16 or f32");
  size_t bytes = host.values.size() * rt::byteSize(*dtype);
  auto buffer = rt::DeviceBuffer::allocate(device, std::max<size_t>(bytes, 1));
  if (!buffer)
    return buffer.takeStatus();
  rt::Status status =
      poisoned
          ? buffer->fill(0xFF)
          : buffer->copyFromHost(rt::encode(*dtype, host.values).data(), bytes);
  if (!status)
    return status;
  DeviceTensor tensor{std::move(*buffer), {}};
  tensor.view.data = tensor.buffer.data();
  tensor.view.shape = host.shape;
  tensor.view.dtype = *dtype;
  return tensor;
}

rt::StatusOr<std::vector<double>> download(const DeviceTensor &tensor,
                                           size_t count) {
  std::vector<unsigned char> raw(count * rt::byteSize(tensor.view.dtype));
  if (rt::Status status = tensor.buffer.copyToHost(raw.data(), raw.size());
      !status)
    return status;
  return rt::decode(tensor.view.dtype, raw.data(), count);
}

/// |gpu − ref| ≤ atol·max(1, max|ref|) + rtol·|ref| per element: one or
/// two units in the last place of bf16 and f16 (as tools/tile-gpu-tests),
/// 1e-4 for f32: the GPU computes in f32 where the evaluator computes in
/// float64, and a row sum of thousands of terms that cancel loses about
/// n·2^-24 of its terms' size. On the scale of the tensor's largest element.
/// The worst ratio of error to allowance.
double worstError(const std::vector<double> &gpu,
                  const std::vector<double> &ref, rt::DType dtype) {
  double rtol = dtype == rt::DType::F32 ? 1e-4 : 1e-2;
  double atol = dtype == rt::DType::F32   ? 1e-4
                : dtype == rt::DType::F16 ? 1e-2
                                          : 2e-2;
  double scale = 1.0;
  for (double value : ref)
    if (std::isfinite(value))
      scale = std::max(scale, std::fabs(value));
  double worst = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(ref[i]) && std::isnan(gpu[i]))
      continue;
    if (std::isinf(ref[i]) && gpu[i] == ref[i])
      continue;
    double ratio =
        std::fabs(gpu[i] - ref[i]) / (atol * scale + rtol * std::fabs(ref[i]));
    if (!(ratio <= worst)) // NaN on the GPU where the reference has none
      worst =
          std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
  }
  return worst;
}

/// Runs `func` on the device with `args` (host buffers), compares with
/// `expected` (the evaluator's results); prints one line per result. The
/// device's results go to `got` when given.
rt::StatusOr<bool>
runAndCompare(const rt::Device &device, ops::Launcher &launcher, FuncOp func,
              const std::vector<interp::Buffer> &args,
              const std::vector<interp::Buffer> &expected,
              llvm::raw_ostream &os,
              std::vector<interp::Buffer> *gotAll = nullptr) {
  std::string name = func.getSymName().str();
  std::vector<DeviceTensor> keep;
  std::vector<ops::Argument> arguments;
  for (auto [index, arg] : llvm::enumerate(args)) {
    if (!arg.isTensor) {
      // Scalar parameters are f32 or integers (KernelVerifier.cpp).
      if (llvm::isa<mlir::FloatType>(func.getArgumentTypes()[index]))
        arguments.push_back(static_cast<float>(arg.values.at(0)));
      else
        arguments.push_back(static_cast<int64_t>(arg.values.at(0)));
      continue;
    }
    auto tensor = upload(device, arg,
                         "argument #" + std::to_string(index) + " of @" + name);
    if (!tensor)
      return tensor.takeStatus();
    arguments.push_back(tensor->view);
    keep.push_back(std::move(*tensor));
  }
  std::vector<DeviceTensor> results;
  std::vector<rt::TensorView> views;
  for (auto [index, want] : llvm::enumerate(expected)) {
    auto tensor = upload(device, want,
                         "result #" + std::to_string(index) + " of @" + name,
                         /*poisoned=*/true);
    if (!tensor)
      return tensor.takeStatus();
    views.push_back(tensor->view);
    results.push_back(std::move(*tensor));
  }
  if (rt::Status status = launcher.run(name, arguments, views); !status)
    return status;
  if (rt::Status status = rt::synchronize(device); !status)
    return status;
  bool ok = true;
  for (auto [index, want] : llvm::enumerate(expected)) {
    auto got = download(results[index], want.values.size());
    if (!got)
      return got.takeStatus();
    double worst = worstError(*got, want.values, results[index].view.dtype);
    bool pass = worst <= 1.0;
    ok &= pass;
    if (gotAll) {
      gotAll->push_back(want);
      gotAll->back().values = *got;
    }
    os << llvm::format("    @%s result #%zu %s %s: worst error %.3g of the "
                       "allowed  %s\n",
                       name.c_str(), index, rt::name(results[index].view.dtype),
                       rt::formatShape(want.shape).c_str(), worst,
                       pass ? "ok" : "FAIL");
  }
  return ok;
}

/// Random cotangents shaped and rounded like the forward's results.
std::vector<interp::Buffer>
makeCotangents(const std::vector<interp::Buffer> &results, uint64_t seed) {
  interp::Random rng(seed * 7919 + 17);
  std::vector<interp::Buffer> cotangents;
  for (const interp::Buffer &result : results) {
    interp::Buffer cotangent = result;
    for (double &value : cotangent.values)
      value = interp::roundTo(result.storage, rng.uniform(-1.0, 1.0));
    cotangents.push_back(std::move(cotangent));
  }
  return cotangents;
}

int fail(llvm::raw_ostream &os, const std::string &message) {
  os.flush();
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

/// Checks one case: @f, then @f_fwd (when values are saved) and @f_bwd.
rt::StatusOr<bool>
checkCase(const rt::Device &device, ops::Launcher &launcher, FuncOp func,
          const std::optional<mlir::tile::DerivedKernel> &derived,
          const std::vector<interp::Buffer> &inputs, uint64_t seed,
          llvm::raw_ostream &os) {
  interp::EvalOptions evalOptions; // rounds at storage types, as the GPU
  auto forward = interp::evaluate(func, inputs, evalOptions);
  if (!forward)
    return rt::Status::error(llvm::toString(forward.takeError()));
  auto ok = runAndCompare(device, launcher, func, inputs, *forward, os);
  if (!ok || !derived)
    return ok;
  bool allOk = *ok;
  // @f_bwd takes the forward's arguments, a cotangent per result, then the
  // values @f_fwd saved (after its results).
  std::vector<interp::Buffer> backwardArgs = inputs;
  for (interp::Buffer &cotangent : makeCotangents(*forward, seed))
    backwardArgs.push_back(std::move(cotangent));
  std::vector<interp::Buffer> deviceArgs = backwardArgs;
  if (derived->forwardWithSaved) {
    auto withSaved =
        interp::evaluate(derived->forwardWithSaved, inputs, evalOptions);
    if (!withSaved)
      return rt::Status::error(llvm::toString(withSaved.takeError()));
    std::vector<interp::Buffer> deviceSaved;
    auto savedOk = runAndCompare(device, launcher, derived->forwardWithSaved,
                                 inputs, *withSaved, os, &deviceSaved);
    if (!savedOk)
      return savedOk;
    allOk &= *savedOk;
    // Each backward gets the values its own forward saved, as in training:
    // a row's max recomputed in f32 on the GPU is compared with the max the
    // GPU saved, not with the evaluator's float64 one.
    for (size_t i = forward->size(); i < withSaved->size(); ++i) {
      backwardArgs.push_back((*withSaved)[i]);
      deviceArgs.push_back(deviceSaved[i]);
    }
  }
  auto gradients =
      interp::evaluate(derived->backward, backwardArgs, evalOptions);
  if (!gradients)
    return rt::Status::error(llvm::toString(gradients.takeError()));
  auto backwardOk = runAndCompare(device, launcher, derived->backward,
                                  deviceArgs, *gradients, os);
  if (!backwardOk)
    return backwardOk;
  return allOk && *backwardOk;
}
} // namespace

int tile::run::runDeviceCheck(FuncOp func, const std::string &source,
                              const std::vector<DeviceCase> &cases,
                              const DeviceCheckOptions &options,
                              llvm::raw_ostream &os) {
  auto device = rt::Device::open(0);
  if (!device)
    return fail(os, "--device: " + device.message());
  std::string name = func.getSymName().str();

  // The backward the evaluator runs is derived here, the one the GPU runs by
  // the JIT from the same source: the same pass with the same options.
  std::optional<mlir::tile::DerivedKernel> derived;
  if (options.backward) {
    mlir::tile::DifferentiateOptions differentiate;
    differentiate.policy = options.policy;
    auto result = mlir::tile::differentiateKernel(func, differentiate);
    if (mlir::failed(result))
      return fail(os, "--device: @" + name + " cannot be differentiated");
    derived = *result;
  }

  // Compiled once: the kernels take any shape their manifest allows.
  jit::CompileOptions compile;
  compile.chip = device->chip();
  compile.differentiate = options.backward;
  compile.policy = mlir::tile::getRecomputePolicyName(options.policy);
  jit::Jit jit("none");
  auto kernels = jit.compile(source, compile);
  if (!kernels)
    return fail(os, "--device: " + kernels.message());
  auto launcher = ops::Launcher::create(*device, *kernels);
  if (!launcher)
    return fail(os, "--device: " + launcher.message());

  os << "device check of @" << name << " on " << device->name() << " ("
     << compile.chip << "), policy " << compile.policy
     << ", against the evaluator\n";
  unsigned failures = 0;
  for (const DeviceCase &deviceCase : cases) {
    os << "  args " << deviceCase.label << "\n";
    auto ok = checkCase(*device, **launcher, func, derived, deviceCase.inputs,
                        options.seed, os);
    if (!ok)
      return fail(os, "--device: " + ok.message());
    failures += !*ok;
  }
  os << llvm::format("%zu cases on the device, %u failed\n", cases.size(),
                     failures);
  return failures == 0 ? 0 : 1;
}
