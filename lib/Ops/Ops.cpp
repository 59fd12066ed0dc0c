//===- Ops.cpp - SwiGLU and RMSNorm, forward and derived backward --------===//

#include "tile/Ops/Ops.h"

#include <iterator>

namespace tile::ops {

const char *const kStreamKernelSource = R"mlir(
func.func @stream(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %z = arith.addf %x, %y : tensor<?x?xf32>
  return %z : tensor<?x?xf32>
})mlir";

namespace {
/// An operator's name and its kernel's source.
struct OperatorKernel {
  const char *name;
  const char *source;
};
// examples/<name>.mlir of every operator in lib/Ops/CMakeLists.txt's
// TILE_OPERATORS, embedded at build time.
#include "OperatorKernels.inc"
} // namespace

const char *operatorSource(const std::string &name) {
  for (const OperatorKernel &kernel : kOperatorKernels)
    if (name == kernel.name)
      return kernel.source;
  return nullptr;
}

const char *operatorName(size_t index) {
  return index < std::size(kOperatorKernels) ? kOperatorKernels[index].name
                                             : nullptr;
}

std::string describe(const ScheduleOverrides &overrides) {
  std::string text;
  if (overrides.threads)
    text += ", " + std::to_string(overrides.threads) + " threads";
  if (overrides.rowsPerCta)
    text += ", " + std::to_string(overrides.rowsPerCta) + " rows per CTA";
  if (overrides.rowGrid)
    text += ", one CTA per row";
  if (overrides.ctas)
    text += ", " + std::to_string(overrides.ctas) + " persistent CTAs";
  if (overrides.vectorWidth)
    text += ", vector width " + std::to_string(overrides.vectorWidth);
  if (overrides.foldFinalize)
    text += ", a folded finalize";
  if (!overrides.registerCaps)
    text += ", no register caps";
  return text;
}

Operators::Operators(rt::Device device, std::string cacheDir,
                     ScheduleOverrides overrides)
    : dev(std::move(device)), jit(std::move(cacheDir)), overrides(overrides) {}

rt::StatusOr<std::unique_ptr<Operators>>
Operators::create(int ordinal, std::string cacheDir,
                  ScheduleOverrides overrides) {
  rt::StatusOr<rt::Device> device = rt::Device::open(ordinal);
  if (!device)
    return device.takeStatus();
  return std::unique_ptr<Operators>(
      new Operators(std::move(*device), std::move(cacheDir), overrides));
}

rt::StatusOr<Launcher *>
Operators::launcher(const char *kernel, rt::DType dtype, bool mainGrad,
                    const std::map<unsigned, int64_t> &widths,
                    bool returnPrimal) {
  jit::CompileOptions options = jit::CompileOptions::forDevice(dev);
  options.dtype = rt::name(dtype);
  options.differentiate = true; // forward and backward in one module
  options.mainGrad = mainGrad;
  options.returnPrimal = returnPrimal;
  options.widths = widths;
  options.schedule = overrides;
  std::string key = std::string(kernel) + "/" + options.dtype +
                    (mainGrad ? "/main-grad" : "") +
                    (returnPrimal ? "/return-primal" : "");
  for (auto [index, width] : widths)
    key += "/w" + std::to_string(index) + "=" + std::to_string(width);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = launchers.find(key); it != launchers.end())
    return it->second.get();
  rt::StatusOr<jit::CompiledKernels> compiled =
      jit.compile(operatorSource(kernel), options);
  if (!compiled)
    return compiled.takeStatus();
  rt::StatusOr<std::unique_ptr<Launcher>> created =
      Launcher::create(dev, *compiled, LoadOptions{overrides.registerCaps});
  if (!created)
    return created.takeStatus();
  Launcher *result = created->get();
  launchers[key] = std::move(*created);
  return result;
}

std::vector<std::pair<std::string, KernelLoad>> Operators::kernelLoads() {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<std::pair<std::string, KernelLoad>> result;
  for (auto &[key, launcher] : launchers)
    for (const KernelLoad &load : launcher->loads())
      result.push_back({key, load});
  return result;
}

Status Operators::call(const char *kernel, const char *function, bool mainGrad,
                       const std::vector<Argument> &arguments,
                       const std::vector<TensorView> &results,
                       unsigned specialized, const RunOptions &options,
                       bool returnPrimal) {
  // The kernels are specialized for the widths of the leading tensor
  // arguments; the launcher checks every other width against them.
  std::map<unsigned, int64_t> widths;
  for (unsigned index = 0; index < specialized; ++index)
    if (const auto *view = std::get_if<TensorView>(&arguments[index]))
      if (!view->shape.empty())
        widths[index] = view->shape.back();
  auto compiled = launcher(kernel, std::get<TensorView>(arguments[0]).dtype,
                           mainGrad, widths, returnPrimal);
  if (!compiled)
    return compiled.takeStatus();
  return (*compiled)->run(function, arguments, results, options);
}

Status Operators::swigluForward(const TensorView &a, const TensorView &b,
                                const TensorView &c, const RunOptions &run) {
  return call("swiglu", "swiglu", false, {a, b}, {c}, 2, run);
}

Status Operators::swigluBackward(const TensorView &a, const TensorView &b,
                                 const TensorView &dc, const TensorView &da,
                                 const TensorView &db, const RunOptions &run) {
  return call("swiglu", "swiglu_bwd", false, {a, b, dc}, {da, db}, 2, run);
}

Status
Operators::swigluBackwardWithForward(const TensorView &a, const TensorView &b,
                                     const TensorView &dc, const TensorView &da,
                                     const TensorView &db, const TensorView &c,
                                     const RunOptions &run) {
  return call("swiglu", "swiglu_bwd", false, {a, b, dc}, {da, db, c}, 2, run,
              /*returnPrimal=*/true);
}

Status checkSiluAndMulInput(const TensorView &x) {
  if (x.shape.empty() || x.shape.back() % 2 != 0)
    return Status::error(
        "silu_and_mul needs an even last dimension [..., 2H], got " +
        (x.shape.empty() ? std::string("a scalar")
                         : std::to_string(x.shape.back())));
  return Status::ok();
}

Status Operators::siluAndMulForward(const TensorView &x, const TensorView &out,
                                    const RunOptions &run) {
  if (Status s = checkSiluAndMulInput(x); !s)
    return s;
  return call("silu_and_mul", "silu_and_mul", false, {x}, {out}, 1, run);
}

Status Operators::siluAndMulBackward(const TensorView &x,
                                     const TensorView &dout,
                                     const TensorView &dx,
                                     const RunOptions &run) {
  if (Status s = checkSiluAndMulInput(x); !s)
    return s;
  return call("silu_and_mul", "silu_and_mul_bwd", false, {x, dout}, {dx}, 1,
              run);
}

Status Operators::siluAndMulBackwardWithForward(const TensorView &x,
                                                const TensorView &dout,
                                                const TensorView &dx,
                                                const TensorView &out,
                                                const RunOptions &run) {
  if (Status s = checkSiluAndMulInput(x); !s)
    return s;
  return call("silu_and_mul", "silu_and_mul_bwd", false, {x, dout}, {dx, out},
              1, run, /*returnPrimal=*/true);
}

Status Operators::scaledSiluAndMulForward(const TensorView &x,
                                          const TensorView &s,
                                          const TensorView &out,
                                          const RunOptions &run) {
  if (Status st = checkSiluAndMulInput(x); !st)
    return st;
  return call("scaled_silu_and_mul", "scaled_silu_and_mul", false, {x, s},
              {out}, 1, run);
}

Status Operators::scaledSiluAndMulBackward(
    const TensorView &x, const TensorView &s, const TensorView &dout,
    const TensorView &dx, const TensorView &ds, const RunOptions &run) {
  if (Status st = checkSiluAndMulInput(x); !st)
    return st;
  return call("scaled_silu_and_mul", "scaled_silu_and_mul_bwd", false,
              {x, s, dout}, {dx, ds}, 1, run);
}

Status Operators::scaledSiluAndMulBackwardWithForward(
    const TensorView &x, const TensorView &s, const TensorView &dout,
    const TensorView &dx, const TensorView &ds, const TensorView &out,
    const RunOptions &run) {
  if (Status st = checkSiluAndMulInput(x); !st)
    return st;
  return call("scaled_silu_and_mul", "scaled_silu_and_mul_bwd", false,
              {x, s, dout}, {dx, ds, out}, 1, run, /*returnPrimal=*/true);
}

Status Operators::rmsNormForward(const TensorView &x, const TensorView &w,
                                 float eps, float offset, const TensorView &y,
                                 const RunOptions &run) {
  return call("rms_norm", "rms_norm", false, {x, w, eps, offset}, {y}, 2, run);
}

Status Operators::rmsNormBackward(const TensorView &x, const TensorView &w,
                                  float eps, float offset, const TensorView &dy,
                                  const TensorView &dx, const TensorView &dw,
                                  const RunOptions &run) {
  return call("rms_norm", "rms_norm_bwd", false, {x, w, eps, offset, dy},
              {dx, dw}, 2, run);
}

Status Operators::rmsNormBackwardAccumulate(const TensorView &x,
                                            const TensorView &w, float eps,
                                            float offset, const TensorView &dy,
                                            const TensorView &dx,
                                            const TensorView &mainGrad,
                                            const RunOptions &run) {
  if (mainGrad.dtype != rt::DType::F32)
    return Status::error(std::string("main_grad must be f32, got ") +
                         rt::name(mainGrad.dtype));
  // The finalize reads main_grad and writes main_grad + dW in place.
  return call("rms_norm", "rms_norm_bwd", true,
              {x, w, eps, offset, dy, mainGrad}, {dx, mainGrad}, 2, run);
}

} // namespace tile::ops
