//===- Ops.cpp - SwiGLU and RMSNorm, forward and derived backward --------===//

#include "tile/Ops/Ops.h"

namespace tile::ops {

namespace {
// examples/*.mlir, embedded at build time (ExampleKernels.inc).
#include "ExampleKernels.inc"

const char *source(const std::string &kernel) {
  if (kernel == "swiglu")
    return kSwigluSource;
  if (kernel == "silu_and_mul")
    return kSiluAndMulSource;
  return kRmsNormSource;
}
/// The last dimension of each tensor, by argument index: what the kernels
/// are specialized for. A mismatch between them is reported by the
/// launcher, which checks every call against the manifest.
std::map<unsigned, int64_t> widthsOf(std::vector<const TensorView *> tensors) {
  std::map<unsigned, int64_t> widths;
  for (unsigned index = 0; index < tensors.size(); ++index)
    if (tensors[index] && !tensors[index]->shape.empty())
      widths[index] = tensors[index]->shape.back();
  return widths;
}
} // namespace

Operators::Operators(rt::Device device, std::string cacheDir,
                     int64_t rowsPerCta)
    : dev(std::move(device)), jit(std::move(cacheDir)), rowsPerCta(rowsPerCta) {
}

rt::StatusOr<std::unique_ptr<Operators>>
Operators::create(int ordinal, std::string cacheDir, int64_t rowsPerCta) {
  rt::StatusOr<rt::Device> device = rt::Device::open(ordinal);
  if (!device)
    return device.takeStatus();
  return std::unique_ptr<Operators>(
      new Operators(std::move(*device), std::move(cacheDir), rowsPerCta));
}

rt::StatusOr<Launcher *>
Operators::launcher(const char *kernel, rt::DType dtype, bool mainGrad,
                    const std::map<unsigned, int64_t> &widths) {
  jit::CompileOptions options;
  options.chip = dev.chip();
  options.dtype = rt::name(dtype);
  options.differentiate = true; // forward and backward in one module
  options.mainGrad = mainGrad;
  options.widths = widths;
  options.rowsPerCta = rowsPerCta;
  std::string key = std::string(kernel) + "/" + options.dtype +
                    (mainGrad ? "/main-grad" : "");
  for (auto [index, width] : widths)
    key += "/w" + std::to_string(index) + "=" + std::to_string(width);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = launchers.find(key); it != launchers.end())
    return it->second.get();
  rt::StatusOr<jit::CompiledKernels> compiled =
      jit.compile(source(kernel), options);
  if (!compiled)
    return compiled.takeStatus();
  rt::StatusOr<std::unique_ptr<Launcher>> created =
      Launcher::create(dev, *compiled);
  if (!created)
    return created.takeStatus();
  Launcher *result = created->get();
  launchers[key] = std::move(*created);
  return result;
}

Status Operators::swigluForward(const TensorView &a, const TensorView &b,
                                const TensorView &c) {
  auto run = launcher("swiglu", a.dtype, false, widthsOf({&a, &b}));
  if (!run)
    return run.takeStatus();
  return (*run)->run("swiglu", {a, b}, {c});
}

Status Operators::swigluBackward(const TensorView &a, const TensorView &b,
                                 const TensorView &dc, const TensorView &da,
                                 const TensorView &db) {
  auto run = launcher("swiglu", a.dtype, false, widthsOf({&a, &b}));
  if (!run)
    return run.takeStatus();
  return (*run)->run("swiglu_bwd", {a, b, dc}, {da, db});
}

Status checkSiluAndMulInput(const TensorView &x) {
  if (x.shape.empty() || x.shape.back() % 2 != 0)
    return Status::error(
        "silu_and_mul needs an even last dimension [..., 2H], got " +
        (x.shape.empty() ? std::string("a scalar")
                         : std::to_string(x.shape.back())));
  return Status::ok();
}

Status Operators::siluAndMulForward(const TensorView &x,
                                    const TensorView &out) {
  if (Status s = checkSiluAndMulInput(x); !s)
    return s;
  auto run = launcher("silu_and_mul", x.dtype, false, widthsOf({&x}));
  if (!run)
    return run.takeStatus();
  return (*run)->run("silu_and_mul", {x}, {out});
}

Status Operators::siluAndMulBackward(const TensorView &x,
                                     const TensorView &dout,
                                     const TensorView &dx) {
  if (Status s = checkSiluAndMulInput(x); !s)
    return s;
  auto run = launcher("silu_and_mul", x.dtype, false, widthsOf({&x}));
  if (!run)
    return run.takeStatus();
  return (*run)->run("silu_and_mul_bwd", {x, dout}, {dx});
}

Status Operators::rmsNormForward(const TensorView &x, const TensorView &w,
                                 float eps, float offset, const TensorView &y) {
  auto run = launcher("rms_norm", x.dtype, false, widthsOf({&x, &w}));
  if (!run)
    return run.takeStatus();
  return (*run)->run("rms_norm", {x, w, eps, offset}, {y});
}

Status Operators::rmsNormBackward(const TensorView &x, const TensorView &w,
                                  float eps, float offset, const TensorView &dy,
                                  const TensorView &dx, const TensorView &dw) {
  auto run = launcher("rms_norm", x.dtype, false, widthsOf({&x, &w}));
  if (!run)
    return run.takeStatus();
  return (*run)->run("rms_norm_bwd", {x, w, eps, offset, dy}, {dx, dw});
}

Status Operators::rmsNormBackwardAccumulate(const TensorView &x,
                                            const TensorView &w, float eps,
                                            float offset, const TensorView &dy,
                                            const TensorView &dx,
                                            const TensorView &mainGrad) {
  if (mainGrad.dtype != rt::DType::F32)
    return Status::error(std::string("main_grad must be f32, got ") +
                         rt::name(mainGrad.dtype));
  auto run = launcher("rms_norm", x.dtype, true, widthsOf({&x, &w}));
  if (!run)
    return run.takeStatus();
  // The finalize reads main_grad and writes main_grad + dW in place.
  return (*run)->run("rms_norm_bwd", {x, w, eps, offset, dy, mainGrad},
                     {dx, mainGrad});
}

} // namespace tile::ops
