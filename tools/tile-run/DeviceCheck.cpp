//===- DeviceCheck.cpp - tile-run --device: the GPU against the evaluator -===//

#include "DeviceCheck.h"
#include "RunData.h"

#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/Interp/Inputs.h"
#include "tile/JIT/JIT.h"
#include "tile/Launcher/Launcher.h"
#include "tile/Ops/Ops.h"
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
                                  bool poisoned = false,
                                  mlir::Type element = {}) {
  // Integer data (labels) is stored as the kernel declares it; the host
  // buffer holds its values (integral: the evaluator checked) as doubles.
  std::optional<rt::DType> dtype =
      element && element.isInteger(32)   ? rt::DType::I32
      : element && element.isInteger(64) ? rt::DType::I64
                                         : deviceType(host.storage);
  if (!dtype)
    return rt::Status::error(what + " is not bf16, f16, f32, i32 or i64");
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

/// One launch of a kernel on the device: its arguments uploaded, its
/// results allocated and poisoned.
struct DeviceCall {
  std::string name;
  std::vector<DeviceTensor> tensors, results;
  std::vector<ops::Argument> arguments;
  std::vector<rt::TensorView> views;
  /// What the call moves at the least: each tensor read or written once.
  double bytes = 0;
};

rt::StatusOr<DeviceCall> prepareCall(const rt::Device &device, FuncOp func,
                                     const std::vector<interp::Buffer> &args,
                                     const std::vector<interp::Buffer> &want) {
  DeviceCall call;
  call.name = func.getSymName().str();
  for (auto [index, arg] : llvm::enumerate(args)) {
    if (!arg.isTensor) {
      // Scalar parameters are f32 or integers (KernelVerifier.cpp).
      if (llvm::isa<mlir::FloatType>(func.getArgumentTypes()[index]))
        call.arguments.push_back(static_cast<float>(arg.values.at(0)));
      else
        call.arguments.push_back(static_cast<int64_t>(arg.values.at(0)));
      continue;
    }
    auto tensor = upload(
        device, arg, "argument #" + std::to_string(index) + " of @" + call.name,
        /*poisoned=*/false,
        mlir::getElementTypeOrSelf(func.getArgumentTypes()[index]));
    if (!tensor)
      return tensor.takeStatus();
    call.arguments.push_back(tensor->view);
    call.bytes += arg.values.size() * rt::byteSize(tensor->view.dtype);
    call.tensors.push_back(std::move(*tensor));
  }
  for (auto [index, result] : llvm::enumerate(want)) {
    auto tensor =
        upload(device, result,
               "result #" + std::to_string(index) + " of @" + call.name,
               /*poisoned=*/true);
    if (!tensor)
      return tensor.takeStatus();
    call.views.push_back(tensor->view);
    call.bytes += result.values.size() * rt::byteSize(tensor->view.dtype);
    call.results.push_back(std::move(*tensor));
  }
  return call;
}

/// What the checks share across cases: the device, the kernels, and for
/// --bench the stream kernel and the work queued ahead of each timing.
struct Session {
  const rt::Device &device;
  /// The kernels of the case at hand (compiled once, or per case when
  /// specialized for its widths).
  ops::Launcher *launcher;
  const run::DeviceCheckOptions &options;
  llvm::raw_ostream &os;
  std::unique_ptr<ops::Launcher> stream;
  std::vector<DeviceTensor> aheadBuffers;
};

/// A float32 [rows, 1024] tensor of small finite values, for the stream.
rt::StatusOr<DeviceTensor> streamTensor(const rt::Device &device,
                                        int64_t rows) {
  auto buffer = rt::DeviceBuffer::allocate(device, rows * 1024 * 4);
  if (!buffer)
    return buffer.takeStatus();
  if (rt::Status status = buffer->fill(0x3C); !status)
    return status;
  DeviceTensor tensor{std::move(*buffer), {}};
  tensor.view.data = tensor.buffer.data();
  tensor.view.shape = {rows, 1024};
  tensor.view.dtype = rt::DType::F32;
  return tensor;
}

/// Device milliseconds of `run`, with the stream kernel queued ahead of
/// each timed call (its host cost hidden, as tile-bench does).
rt::StatusOr<double> deviceTime(Session &session,
                                const std::function<rt::Status()> &run) {
  auto &ahead = session.aheadBuffers;
  return rt::medianMilliseconds(
      session.device, session.options.benchIterations,
      [&](int) { return run(); },
      [&] {
        return session.stream->run("stream", {ahead[0].view, ahead[1].view},
                                   {ahead[2].view});
      });
}

/// --bench: the call's time and GB/s, next to the stream kernel's over as
/// many bytes.
rt::Status bench(Session &session, DeviceCall &call) {
  auto ms = deviceTime(session, [&] {
    return session.launcher->run(call.name, call.arguments, call.views);
  });
  if (!ms)
    return ms.takeStatus();
  int64_t rows = std::max<int64_t>(1, std::llround(call.bytes / 12 / 1024));
  std::vector<DeviceTensor> io;
  for (int i = 0; i < 3; ++i) {
    auto tensor = streamTensor(session.device, rows);
    if (!tensor)
      return tensor.takeStatus();
    io.push_back(std::move(*tensor));
  }
  auto streamMs = deviceTime(session, [&] {
    return session.stream->run("stream", {io[0].view, io[1].view},
                               {io[2].view});
  });
  if (!streamMs)
    return streamMs.takeStatus();
  double gbps = call.bytes / (*ms * 1e-3) / 1e9;
  double streamGbps = 12.0 * rows * 1024 / (*streamMs * 1e-3) / 1e9;
  session.os << llvm::format("    @%s: %.4f ms, %.0f GB/s; the stream kernel "
                             "over as many bytes %.0f GB/s (%.2f)\n",
                             call.name.c_str(), *ms, gbps, streamGbps,
                             gbps / streamGbps);
  return rt::Status::ok();
}

/// Runs `func` on the device with `args` (host buffers) and compares with
/// `want` (the evaluator's results); prints one line per result. The
/// device's results go to `got` when given.
rt::StatusOr<bool> runAndCompare(Session &session, FuncOp func,
                                 const std::vector<interp::Buffer> &args,
                                 const std::vector<interp::Buffer> &want,
                                 std::vector<interp::Buffer> *got = nullptr) {
  auto call = prepareCall(session.device, func, args, want);
  if (!call)
    return call.takeStatus();
  if (rt::Status status =
          session.launcher->run(call->name, call->arguments, call->views);
      !status)
    return status;
  if (rt::Status status = rt::synchronize(session.device); !status)
    return status;
  bool ok = true;
  for (auto [index, expected] : llvm::enumerate(want)) {
    const DeviceTensor &result = call->results[index];
    auto values = download(result, expected.values.size());
    if (!values)
      return values.takeStatus();
    double worst = worstError(*values, expected.values, result.view.dtype);
    bool pass = worst <= 1.0;
    ok &= pass;
    if (got) {
      got->push_back(expected);
      got->back().values = std::move(*values);
    }
    session.os << llvm::format(
        "    @%s result #%zu %s %s: worst error %.3g "
        "of the allowed  %s\n",
        call->name.c_str(), index, rt::name(result.view.dtype),
        rt::formatShape(expected.shape).c_str(), worst, pass ? "ok" : "FAIL");
  }
  if (session.options.benchIterations > 0)
    if (rt::Status status = bench(session, *call); !status)
      return status;
  return ok;
}

int fail(llvm::raw_ostream &os, const std::string &message) {
  os.flush();
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

/// Checks one case: @f, then @f_fwd (when values are saved) and @f_bwd.
rt::StatusOr<bool>
checkCase(Session &session, FuncOp func,
          const std::optional<mlir::tile::DerivedKernel> &derived,
          const std::vector<interp::Buffer> &inputs) {
  const run::DeviceCheckOptions &options = session.options;
  // The evaluator rounds at storage types, as the GPU does.
  interp::EvalOptions evalOptions;
  evalOptions.maxElementOps = options.maxElementOps;
  auto reference =
      run::evaluateCase(func, derived, inputs, options.seed, evalOptions);
  if (!reference)
    return rt::Status::error(llvm::toString(reference.takeError()));
  std::vector<interp::Buffer> forward;
  auto ok = runAndCompare(session, func, inputs, reference->results, &forward);
  if (!ok)
    return ok;
  bool allOk = *ok;
  std::vector<interp::Buffer> gradients;
  if (derived) {
    // Each backward gets the values its own forward saved and the results
    // it computed, as in training: a row's max recomputed in f32 on the GPU
    // is compared with the max the GPU saved, not with the evaluator's
    // float64 one.
    std::vector<interp::Buffer> deviceSaved;
    if (derived->forwardWithSaved) {
      std::vector<interp::Buffer> want = reference->results;
      want.insert(want.end(), reference->saved.begin(), reference->saved.end());
      std::vector<interp::Buffer> withSaved;
      auto savedOk = runAndCompare(session, derived->forwardWithSaved, inputs,
                                   want, &withSaved);
      if (!savedOk)
        return savedOk;
      allOk &= *savedOk;
      deviceSaved.assign(withSaved.begin() + reference->results.size(),
                         withSaved.end());
    }
    auto backwardOk = runAndCompare(
        session, derived->backward,
        run::backwardArguments(derived->backward, inputs, reference->cotangents,
                               deviceSaved, forward),
        reference->gradients, &gradients);
    if (!backwardOk)
      return backwardOk;
    allOk &= *backwardOk;
  }
  if (!options.outputDir.empty()) {
    llvm::Error e = run::writeEvaluation(options.outputDir, derived, inputs,
                                         *reference, options.argumentNames);
    if (!e)
      e = run::writeResults(options.outputDir, derived, forward, gradients,
                            options.argumentNames, /*asReference=*/false,
                            ".gpu");
    if (e)
      return rt::Status::error(llvm::toString(std::move(e)));
  }
  return allOk;
}
} // namespace

int tile::run::runDeviceCheck(
    FuncOp func, const std::optional<mlir::tile::DerivedKernel> &derived,
    const std::string &source, const std::vector<DeviceCase> &cases,
    const DeviceCheckOptions &options, llvm::raw_ostream &os) {
  auto device = rt::Device::open(0);
  if (!device) {
    os.flush();
    llvm::errs() << "tile-run: --device: no usable GPU (" << device.message()
                 << "); nothing was run\n";
    return kNoDeviceStatus;
  }
  std::string name = func.getSymName().str();

  // Compiled once (the kernels take any shape their manifest allows), or
  // per case for --specialize-widths (the widths become constants).
  jit::CompileOptions compile = jit::CompileOptions::forDevice(*device);
  // The JIT derives the GPU's backward from the same source with the
  // same options as the evaluator's.
  compile.differentiate = derived.has_value();
  compile.policy = mlir::tile::getRecomputePolicyName(options.policy);
  jit::Jit jit("none");
  auto compileFor = [&](const DeviceCase *deviceCase)
      -> rt::StatusOr<std::unique_ptr<ops::Launcher>> {
    jit::CompileOptions specialized = compile;
    if (deviceCase)
      for (auto [index, input] : llvm::enumerate(deviceCase->inputs))
        if (input.isTensor && input.shape.size() == 2)
          specialized.widths[index] = input.shape.back();
    auto kernels = jit.compile(source, specialized);
    if (!kernels)
      return kernels.takeStatus();
    return ops::Launcher::create(*device, *kernels);
  };
  std::unique_ptr<ops::Launcher> generic;
  if (!options.specializeWidths) {
    auto launcher = compileFor(nullptr);
    if (!launcher)
      return fail(os, "--device: " + launcher.message());
    generic = std::move(*launcher);
  }
  Session session{*device, generic.get(), options, os, nullptr, {}};
  if (options.benchIterations > 0) {
    jit::CompileOptions streamOptions = jit::CompileOptions::forDevice(*device);
    auto stream = jit.compile(ops::kStreamKernelSource, streamOptions);
    if (!stream)
      return fail(os, "--bench: " + stream.message());
    auto streamLauncher = ops::Launcher::create(*device, *stream);
    if (!streamLauncher)
      return fail(os, "--bench: " + streamLauncher.message());
    session.stream = std::move(*streamLauncher);
    // Queued ahead of each timed call: the stream over 2^24 elements
    // (about 40 us on an H100).
    for (int i = 0; i < 3; ++i) {
      auto tensor = streamTensor(*device, 16384);
      if (!tensor)
        return fail(os, "--bench: " + tensor.message());
      session.aheadBuffers.push_back(std::move(*tensor));
    }
  }

  os << "device check of @" << name << " on " << device->name() << " ("
     << compile.chip << "), "
     << (options.specializeWidths ? "specialized for each case's widths, " : "")
     << (derived ? "forward and backward, policy " + compile.policy
                 : std::string("forward"))
     << ", against the evaluator\n";
  unsigned failures = 0;
  for (const DeviceCase &deviceCase : cases) {
    os << "  args " << deviceCase.label << "\n";
    std::unique_ptr<ops::Launcher> specialized;
    if (options.specializeWidths) {
      auto launcher = compileFor(&deviceCase);
      if (!launcher)
        return fail(os, "--device: " + launcher.message());
      specialized = std::move(*launcher);
      session.launcher = specialized.get();
    }
    auto ok = checkCase(session, func, derived, deviceCase.inputs);
    if (!ok)
      return fail(os, "--device: " + ok.message());
    failures += !*ok;
  }
  os << llvm::format("%zu cases on the device, %u failed\n", cases.size(),
                     failures);
  return failures == 0 ? 0 : 1;
}
