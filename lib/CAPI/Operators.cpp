//===- Operators.cpp - tile::ops through the C API ------------------------===//

#include "Support.h"

#include "tile/Ops/Ops.h"

using tile::rt::Status;
using tile::rt::StatusOr;
using tile::rt::TensorView;

struct tile_operators_t {
  std::unique_ptr<tile::ops::Operators> operators;
};

namespace {

tile::ops::RunOptions toRun(const tile_run *run) {
  tile::ops::RunOptions options;
  if (!run)
    return options;
  options.stream = static_cast<tile::rt::cu::Stream>(run->stream);
  options.workspace = reinterpret_cast<tile::rt::cu::DevicePtr>(run->workspace);
  options.workspaceBytes = run->workspace_bytes;
  options.callerWorkspace = run->workspace != nullptr;
  return options;
}

/// Converts the named tensors, then calls `body` with their views.
template <typename Body>
tile_status withViews(
    tile_operators ops,
    std::initializer_list<std::pair<const char *, const tile_tensor *>> tensors,
    Body body) {
  if (!ops)
    return tile::capi::error("a null tile_operators");
  std::vector<TensorView> views;
  for (auto [name, tensor] : tensors) {
    StatusOr<TensorView> view = tile::capi::toView(tensor, name);
    if (!view)
      return tile::capi::toC(view.takeStatus());
    views.push_back(std::move(*view));
  }
  return tile::capi::toC(body(*ops->operators, views));
}

} // namespace

extern "C" {

const char *tile_operator_source(const char *name) {
  return name ? tile::ops::exampleSource(name) : nullptr;
}

tile_status tile_operators_create(int device, const char *cache_dir,
                                  tile_operators *operators) {
  if (!operators)
    return tile::capi::error("tile_operators_create: a null result pointer");
  *operators = nullptr;
  auto created =
      tile::ops::Operators::create(device, cache_dir ? cache_dir : "");
  if (!created)
    return tile::capi::toC(created.takeStatus());
  *operators = new tile_operators_t{std::move(*created)};
  return nullptr;
}

void tile_operators_destroy(tile_operators operators) { delete operators; }

tile_status tile_swiglu_forward(tile_operators ops, const tile_run *run,
                                const tile_tensor *a, const tile_tensor *b,
                                const tile_tensor *c) {
  return withViews(ops, {{"a", a}, {"b", b}, {"c", c}},
                   [&](tile::ops::Operators &o, std::vector<TensorView> &v) {
                     return o.swigluForward(v[0], v[1], v[2], toRun(run));
                   });
}

tile_status tile_swiglu_backward(tile_operators ops, const tile_run *run,
                                 const tile_tensor *a, const tile_tensor *b,
                                 const tile_tensor *dc, const tile_tensor *da,
                                 const tile_tensor *db) {
  return withViews(
      ops, {{"a", a}, {"b", b}, {"dc", dc}, {"da", da}, {"db", db}},
      [&](tile::ops::Operators &o, std::vector<TensorView> &v) {
        return o.swigluBackward(v[0], v[1], v[2], v[3], v[4], toRun(run));
      });
}

tile_status tile_silu_and_mul_forward(tile_operators ops, const tile_run *run,
                                      const tile_tensor *x,
                                      const tile_tensor *out) {
  return withViews(ops, {{"x", x}, {"out", out}},
                   [&](tile::ops::Operators &o, std::vector<TensorView> &v) {
                     return o.siluAndMulForward(v[0], v[1], toRun(run));
                   });
}

tile_status tile_silu_and_mul_backward(tile_operators ops, const tile_run *run,
                                       const tile_tensor *x,
                                       const tile_tensor *dout,
                                       const tile_tensor *dx) {
  return withViews(ops, {{"x", x}, {"dout", dout}, {"dx", dx}},
                   [&](tile::ops::Operators &o, std::vector<TensorView> &v) {
                     return o.siluAndMulBackward(v[0], v[1], v[2], toRun(run));
                   });
}

tile_status tile_rms_norm_forward(tile_operators ops, const tile_run *run,
                                  const tile_tensor *x, const tile_tensor *w,
                                  float eps, float offset,
                                  const tile_tensor *y) {
  return withViews(ops, {{"x", x}, {"w", w}, {"y", y}},
                   [&](tile::ops::Operators &o, std::vector<TensorView> &v) {
                     return o.rmsNormForward(v[0], v[1], eps, offset, v[2],
                                             toRun(run));
                   });
}

tile_status tile_rms_norm_backward(tile_operators ops, const tile_run *run,
                                   const tile_tensor *x, const tile_tensor *w,
                                   float eps, float offset,
                                   const tile_tensor *dy, const tile_tensor *dx,
                                   const tile_tensor *dw,
                                   const tile_tensor *main_grad) {
  if ((dw == nullptr) == (main_grad == nullptr))
    return tile::capi::error(
        "rms_norm backward takes exactly one of dw and main_grad");
  if (main_grad)
    return withViews(
        ops,
        {{"x", x}, {"w", w}, {"dy", dy}, {"dx", dx}, {"main_grad", main_grad}},
        [&](tile::ops::Operators &o, std::vector<TensorView> &v) {
          return o.rmsNormBackwardAccumulate(v[0], v[1], eps, offset, v[2],
                                             v[3], v[4], toRun(run));
        });
  return withViews(ops,
                   {{"x", x}, {"w", w}, {"dy", dy}, {"dx", dx}, {"dw", dw}},
                   [&](tile::ops::Operators &o, std::vector<TensorView> &v) {
                     return o.rmsNormBackward(v[0], v[1], eps, offset, v[2],
                                              v[3], v[4], toRun(run));
                   });
}

} // extern "C"
