//===- MLP.cpp - the SwiGLU MLP, dense or grouped, through the C API -----===//
//
// One stack: the dense MLP is the grouped one with one expert (as
// tile::ops::TiledSwiGLUMLP is in C++), so the C API has one handle and one
// pair of steps for both.
//
//===----------------------------------------------------------------------===//

#include "Support.h"

#include "tile/Ops/GroupedMLP.h"

#include <mutex>

using tile::rt::Status;
using tile::rt::StatusOr;
using tile::rt::TensorView;

struct tile_mlp_t {
  // GroupedSwiGLUMLP keeps the plan of the step under way: one call at a
  // time.
  std::unique_ptr<tile::ops::GroupedSwiGLUMLP> mlp;
  std::mutex mutex;
};

namespace {

/// tile_mlp_options as the operator takes them (NULL: the defaults).
tile::ops::MLPOptions toOptions(const tile_mlp_options *options) {
  tile::ops::MLPOptions chosen;
  if (options) {
    chosen.shards = options->shards;
    if (options->memory_budget)
      chosen.memoryBudgetBytes = options->memory_budget;
    chosen.recompute = options->recompute != 0;
    if (options->streams)
      chosen.streams = options->streams;
  }
  return chosen;
}

/// The experts' weights (or main_grad) from stacked tensors: gate and up
/// [E, I, H], or a fused gate [E, 2I, H] with `up` null.
template <typename Grouped>
StatusOr<Grouped> stackedTriple(const char *what, const tile_tensor *gate,
                                const tile_tensor *up,
                                const tile_tensor *down) {
  std::string prefix(what);
  if (up) {
    auto v = tile::capi::toViews({{(prefix + "gate").c_str(), gate},
                                  {(prefix + "up").c_str(), up},
                                  {(prefix + "down").c_str(), down}});
    if (!v)
      return v.takeStatus();
    return Grouped::stacked((*v)[0], (*v)[1], (*v)[2]);
  }
  auto v = tile::capi::toViews({{(prefix + "gate_up").c_str(), gate},
                                {(prefix + "down").c_str(), down}});
  if (!v)
    return v.takeStatus();
  return Grouped::fusedStacked((*v)[0], (*v)[1]);
}

StatusOr<std::vector<int64_t>> hostSplits(const int64_t *splits,
                                          int64_t experts) {
  if (experts <= 0)
    return Status::error("the MLP needs experts > 0, got " +
                         std::to_string(experts));
  if (!splits)
    return Status::error("splits is null (E host integers expected)");
  return std::vector<int64_t>(splits, splits + experts);
}

StatusOr<tile::ops::ExpertSplits> deviceSplits(const tile_tensor *splits) {
  auto v = tile::capi::toViews({{"splits", splits}});
  if (!v)
    return v.takeStatus();
  // Not the host splits of an empty vector: a null device pointer is an
  // error of its own.
  if (!(*v)[0].data)
    return Status::error("splits has a null data pointer (a device tensor "
                         "of E counts expected)");
  return tile::ops::ExpertSplits::onDevice((*v)[0]);
}

/// The routing weights and their gradient as views, a null tensor an empty
/// view (no routing: the plain MLP's step).
StatusOr<std::vector<tile::rt::TensorView>>
routingViews(std::vector<std::pair<const char *, const tile_tensor *>> named) {
  std::vector<tile::rt::TensorView> views(named.size());
  for (size_t i = 0; i < named.size(); ++i) {
    if (!named[i].second)
      continue;
    auto v = tile::capi::toViews({named[i]});
    if (!v)
      return v.takeStatus();
    // A given tensor's data is never "none" (that is a null tensor): a
    // null pointer would run the step without the weights.
    if (!(*v)[0].data && (*v)[0].numElements() > 0)
      return Status::error(std::string(named[i].first) +
                           " has a null data pointer");
    views[i] = (*v)[0];
  }
  return views;
}

tile_status forward(tile_mlp mlp, const tile_run *run, const tile_tensor *gate,
                    const tile_tensor *up, const tile_tensor *down,
                    const tile_tensor *x, const tile::ops::ExpertSplits &splits,
                    const tile_tensor *y,
                    const tile_tensor *routing = nullptr) {
  if (!mlp)
    return tile::capi::error("tile_mlp_forward: a null tile_mlp");
  auto weights =
      stackedTriple<tile::ops::GroupedMLPWeights>("", gate, up, down);
  if (!weights)
    return tile::capi::toC(weights.takeStatus());
  auto v = tile::capi::toViews({{"x", x}, {"y", y}});
  if (!v)
    return tile::capi::toC(v.takeStatus());
  auto w = routingViews({{"routing", routing}});
  if (!w)
    return tile::capi::toC(w.takeStatus());
  std::lock_guard<std::mutex> lock(mlp->mutex);
  return tile::capi::toC(mlp->mlp->forward(*weights, (*v)[0], splits, (*v)[1],
                                           tile::capi::toRun(run), (*w)[0]));
}

tile_status
backward(tile_mlp mlp, const tile_run *run, const tile_tensor *gate,
         const tile_tensor *up, const tile_tensor *down, const tile_tensor *x,
         const tile::ops::ExpertSplits &splits, const tile_tensor *dy,
         const tile_tensor *dx, const tile_tensor *main_grad_gate,
         const tile_tensor *main_grad_up, const tile_tensor *main_grad_down,
         int overwrite, const tile_tensor *routing = nullptr,
         const tile_tensor *d_routing = nullptr,
         tile::ops::GroupedSwiGLUMLP::Part part =
             tile::ops::GroupedSwiGLUMLP::Part::Whole) {
  if (!mlp)
    return tile::capi::error("tile_mlp_backward: a null tile_mlp");
  auto weights =
      stackedTriple<tile::ops::GroupedMLPWeights>("", gate, up, down);
  if (!weights)
    return tile::capi::toC(weights.takeStatus());
  auto grads = stackedTriple<tile::ops::GroupedMLPGradients>(
      "main_grad_", main_grad_gate, main_grad_up, main_grad_down);
  if (!grads)
    return tile::capi::toC(grads.takeStatus());
  // A part's unused tensors are null (empty views), its used ones not.
  using Part = tile::ops::GroupedSwiGLUMLP::Part;
  std::vector<std::pair<const char *, const tile_tensor *>> named = {
      {"x", part == Part::Down ? nullptr : x},
      {"dy", part == Part::GateUp ? nullptr : dy},
      {"dx", part == Part::Down ? nullptr : dx}};
  std::vector<tile::rt::TensorView> v(named.size());
  for (size_t i = 0; i < named.size(); ++i) {
    if (!named[i].second)
      continue;
    auto view = tile::capi::toViews({named[i]});
    if (!view)
      return tile::capi::toC(view.takeStatus());
    v[i] = (*view)[0];
  }
  auto w = routingViews({{"routing", routing}, {"d_routing", d_routing}});
  if (!w)
    return tile::capi::toC(w.takeStatus());
  std::lock_guard<std::mutex> lock(mlp->mutex);
  return tile::capi::toC(mlp->mlp->backward(
      *weights, v[0], splits, v[1], v[2], *grads, overwrite != 0,
      tile::capi::toRun(run), (*w)[0], (*w)[1], part));
}

/// The MLP's dtypes: bf16, f16 or f32.
StatusOr<tile::rt::DType> mlpDType(tile_dtype dtype) {
  StatusOr<tile::rt::DType> type = tile::capi::deviceDType(dtype, "the MLP");
  if (!type || tile::rt::isFloat(*type))
    return type;
  return Status::error(std::string("the MLP has dtype ") +
                       tile::rt::name(*type) + ": it is bf16, f16 or f32");
}

} // namespace

extern "C" {

tile_status tile_mlp_plan(const tile_mlp_options *options, int64_t rows,
                          int64_t intermediate, int64_t experts,
                          tile_dtype dtype, int64_t *shards,
                          int64_t *rows_per_shard, size_t *workspace_bytes) {
  StatusOr<tile::rt::DType> type = mlpDType(dtype);
  if (!type)
    return tile::capi::toC(type.takeStatus());
  auto plan = tile::ops::planShards(rows, intermediate, *type,
                                    toOptions(options), experts);
  if (!plan)
    return tile::capi::toC(plan.takeStatus());
  if (shards)
    *shards = plan->shards;
  if (rows_per_shard)
    *rows_per_shard = plan->rowsPerShard;
  if (workspace_bytes)
    *workspace_bytes = plan->workspaceBytes();
  return nullptr;
}

tile_status tile_mlp_workspace_layout(const tile_mlp_options *options,
                                      int64_t intermediate, int64_t experts,
                                      tile_dtype dtype, size_t *fixed_bytes,
                                      int64_t *buffers, size_t *row_bytes,
                                      size_t *alignment,
                                      int64_t *kept_buffers) {
  StatusOr<tile::rt::DType> type = mlpDType(dtype);
  if (!type)
    return tile::capi::toC(type.takeStatus());
  auto layout = tile::ops::planWorkspace(intermediate, *type,
                                         toOptions(options), experts);
  if (!layout)
    return tile::capi::toC(layout.takeStatus());
  if (fixed_bytes)
    *fixed_bytes = layout->fixedBytes;
  if (buffers)
    *buffers = layout->buffers;
  if (row_bytes)
    *row_bytes = layout->rowBytes;
  if (alignment)
    *alignment = layout->alignment;
  if (kept_buffers)
    *kept_buffers = layout->keptBuffers;
  return nullptr;
}

tile_status tile_mlp_create(tile_operators ops, const tile_mlp_options *options,
                            tile_mlp *mlp) {
  if (!mlp)
    return tile::capi::error("tile_mlp_create: a null result pointer");
  *mlp = nullptr;
  if (!ops)
    return tile::capi::error("tile_mlp_create: a null tile_operators");
  auto created =
      tile::ops::GroupedSwiGLUMLP::create(*ops->operators, toOptions(options));
  if (!created)
    return tile::capi::toC(created.takeStatus());
  *mlp = new tile_mlp_t{std::move(*created), {}};
  return nullptr;
}

void tile_mlp_destroy(tile_mlp mlp) { delete mlp; }

tile_status tile_mlp_forward(tile_mlp mlp, const tile_run *run,
                             const tile_tensor *gate, const tile_tensor *up,
                             const tile_tensor *down, const tile_tensor *x,
                             const int64_t *splits, int64_t experts,
                             const tile_tensor *y) {
  auto counts = hostSplits(splits, experts);
  if (!counts)
    return tile::capi::toC(counts.takeStatus());
  return forward(mlp, run, gate, up, down, x, *counts, y);
}

tile_status tile_mlp_forward_device_splits(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate,
    const tile_tensor *up, const tile_tensor *down, const tile_tensor *x,
    const tile_tensor *splits, const tile_tensor *y) {
  auto counts = deviceSplits(splits);
  if (!counts)
    return tile::capi::toC(counts.takeStatus());
  return forward(mlp, run, gate, up, down, x, *counts, y);
}

tile_status tile_mlp_backward(tile_mlp mlp, const tile_run *run,
                              const tile_tensor *gate, const tile_tensor *up,
                              const tile_tensor *down, const tile_tensor *x,
                              const int64_t *splits, int64_t experts,
                              const tile_tensor *dy, const tile_tensor *dx,
                              const tile_tensor *main_grad_gate,
                              const tile_tensor *main_grad_up,
                              const tile_tensor *main_grad_down,
                              int overwrite) {
  auto counts = hostSplits(splits, experts);
  if (!counts)
    return tile::capi::toC(counts.takeStatus());
  return backward(mlp, run, gate, up, down, x, *counts, dy, dx, main_grad_gate,
                  main_grad_up, main_grad_down, overwrite);
}

tile_status tile_mlp_backward_device_splits(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate,
    const tile_tensor *up, const tile_tensor *down, const tile_tensor *x,
    const tile_tensor *splits, const tile_tensor *dy, const tile_tensor *dx,
    const tile_tensor *main_grad_gate, const tile_tensor *main_grad_up,
    const tile_tensor *main_grad_down, int overwrite) {
  auto counts = deviceSplits(splits);
  if (!counts)
    return tile::capi::toC(counts.takeStatus());
  return backward(mlp, run, gate, up, down, x, *counts, dy, dx, main_grad_gate,
                  main_grad_up, main_grad_down, overwrite);
}

tile_status
tile_mlp_forward_routed(tile_mlp mlp, const tile_run *run,
                        const tile_tensor *gate_up, const tile_tensor *down,
                        const tile_tensor *x, const tile_tensor *splits,
                        const tile_tensor *routing, const tile_tensor *y) {
  if (!mlp)
    return tile::capi::error("tile_mlp_forward_routed: a null tile_mlp");
  if (!routing)
    return tile::capi::error("tile_mlp_forward_routed: routing is null");
  auto counts = deviceSplits(splits);
  if (!counts)
    return tile::capi::toC(counts.takeStatus());
  return forward(mlp, run, gate_up, nullptr, down, x, *counts, y, routing);
}

tile_status tile_mlp_backward_routed(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate_up,
    const tile_tensor *down, const tile_tensor *x, const tile_tensor *splits,
    const tile_tensor *routing, const tile_tensor *dy, const tile_tensor *dx,
    const tile_tensor *d_routing, const tile_tensor *main_grad_gate_up,
    const tile_tensor *main_grad_down, int overwrite) {
  if (!mlp)
    return tile::capi::error("tile_mlp_backward_routed: a null tile_mlp");
  if (!routing || !d_routing)
    return tile::capi::error(
        "tile_mlp_backward_routed: routing and d_routing must not be null");
  auto counts = deviceSplits(splits);
  if (!counts)
    return tile::capi::toC(counts.takeStatus());
  return backward(mlp, run, gate_up, nullptr, down, x, *counts, dy, dx,
                  main_grad_gate_up, nullptr, main_grad_down, overwrite,
                  routing, d_routing);
}

tile_status tile_mlp_backward_routed_down(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate_up,
    const tile_tensor *down, const tile_tensor *splits,
    const tile_tensor *routing, const tile_tensor *dy,
    const tile_tensor *d_routing, const tile_tensor *main_grad_gate_up,
    const tile_tensor *main_grad_down, int overwrite) {
  if (!mlp)
    return tile::capi::error("tile_mlp_backward_routed_down: a null tile_mlp");
  if (!routing || !d_routing || !dy)
    return tile::capi::error("tile_mlp_backward_routed_down: routing, dy and "
                             "d_routing must not be null");
  auto counts = deviceSplits(splits);
  if (!counts)
    return tile::capi::toC(counts.takeStatus());
  return backward(mlp, run, gate_up, nullptr, down, nullptr, *counts, dy,
                  nullptr, main_grad_gate_up, nullptr, main_grad_down,
                  overwrite, routing, d_routing,
                  tile::ops::GroupedSwiGLUMLP::Part::Down);
}

tile_status tile_mlp_backward_routed_gate_up(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate_up,
    const tile_tensor *down, const tile_tensor *x, const tile_tensor *splits,
    const tile_tensor *dx, const tile_tensor *main_grad_gate_up,
    const tile_tensor *main_grad_down, int overwrite) {
  if (!mlp)
    return tile::capi::error(
        "tile_mlp_backward_routed_gate_up: a null tile_mlp");
  if (!x || !dx)
    return tile::capi::error(
        "tile_mlp_backward_routed_gate_up: x and dx must not be null");
  auto counts = deviceSplits(splits);
  if (!counts)
    return tile::capi::toC(counts.takeStatus());
  return backward(mlp, run, gate_up, nullptr, down, x, *counts, nullptr, dx,
                  main_grad_gate_up, nullptr, main_grad_down, overwrite,
                  nullptr, nullptr, tile::ops::GroupedSwiGLUMLP::Part::GateUp);
}

} // extern "C"
