//===- GroupedMLPOperands.cpp - a grouped MLP's stacks and checks --------===//
//
// The experts' stacked weights and main_grad as per-expert views, and the
// checks of a step's operands (GroupedMLPOperands.h) that GroupedMLP.cpp
// runs before it touches a workspace.
//
//===----------------------------------------------------------------------===//

#include "GroupedMLPOperands.h"

namespace tile::ops {

using rt::DType;

namespace {

Status inExpert(size_t expert, const Status &status) {
  return Status::error("expert " + std::to_string(expert) + ": " +
                       status.message());
}

/// Expert `index` of a stacked [E, rows, cols] tensor, as a [rows, cols]
/// view.
TensorView expertOf(const TensorView &stacked, int64_t index) {
  TensorView view = stacked;
  view.shape = {stacked.shape[1], stacked.shape[2]};
  view.strides = {};
  view.data += static_cast<rt::cu::DevicePtr>(index * stacked.shape[1] *
                                              stacked.shape[2]) *
               rt::byteSize(stacked.dtype);
  return view;
}

/// Checks that the stacked tensors are contiguous [E, rows, cols] with one
/// E; returns E.
rt::StatusOr<int64_t> stackedExperts(
    const std::vector<std::pair<const char *, const TensorView *>> &named) {
  int64_t experts = -1;
  for (const auto &[name, view] : named) {
    if (view->shape.size() != 3)
      return Status::error(std::string("the stacked ") + name +
                           " must be [E, rows, cols], got " +
                           rt::formatShape(view->shape));
    if (!view->isContiguous())
      return Status::error(std::string("the stacked ") + name +
                           " is not contiguous");
    if (experts >= 0 && view->shape[0] != experts)
      return Status::error(std::string("the stacked ") + name + " has " +
                           std::to_string(view->shape[0]) + " experts, not " +
                           std::to_string(experts) + " as the others");
    experts = view->shape[0];
  }
  if (experts <= 0)
    return Status::error("a grouped MLP needs at least one expert");
  return experts;
}

/// The per-expert triples (gate, up, down) of stacked tensors, each built
/// by `make` from the expert's views: the weights' and the gradients'.
template <typename Grouped, typename Make>
rt::StatusOr<Grouped>
perExpert(const std::vector<std::pair<const char *, const TensorView *>> &named,
          Make make) {
  rt::StatusOr<int64_t> experts = stackedExperts(named);
  if (!experts)
    return experts.takeStatus();
  Grouped grouped;
  for (int64_t e = 0; e < *experts; ++e) {
    std::vector<TensorView> views;
    for (const auto &entry : named)
      views.push_back(expertOf(*entry.second, e));
    auto triple = make(views);
    if (!triple)
      return triple.takeStatus();
    grouped.experts.push_back(*triple);
  }
  return grouped;
}

} // namespace

rt::StatusOr<GroupedMLPWeights>
GroupedMLPWeights::stacked(const TensorView &gate, const TensorView &up,
                           const TensorView &down) {
  return perExpert<GroupedMLPWeights>(
      {{"gate weight", &gate}, {"up weight", &up}, {"down weight", &down}},
      [](const std::vector<TensorView> &v) -> rt::StatusOr<MLPWeights> {
        return MLPWeights{v[0], v[1], v[2]};
      });
}

rt::StatusOr<GroupedMLPWeights>
GroupedMLPWeights::fusedStacked(const TensorView &gateUp,
                                const TensorView &down) {
  return perExpert<GroupedMLPWeights>(
      {{"gate/up weight", &gateUp}, {"down weight", &down}},
      [](const std::vector<TensorView> &v) {
        return MLPWeights::fused(v[0], v[1]);
      });
}

rt::StatusOr<GroupedMLPGradients>
GroupedMLPGradients::stacked(const TensorView &gate, const TensorView &up,
                             const TensorView &down) {
  return perExpert<GroupedMLPGradients>(
      {{"main_grad of the gate weight", &gate},
       {"main_grad of the up weight", &up},
       {"main_grad of the down weight", &down}},
      [](const std::vector<TensorView> &v) -> rt::StatusOr<MLPGradients> {
        return MLPGradients{v[0], v[1], v[2]};
      });
}

rt::StatusOr<GroupedMLPGradients>
GroupedMLPGradients::fusedStacked(const TensorView &gateUp,
                                  const TensorView &down) {
  return perExpert<GroupedMLPGradients>(
      {{"main_grad of the gate/up weight", &gateUp},
       {"main_grad of the down weight", &down}},
      [](const std::vector<TensorView> &v) {
        return MLPGradients::fused(v[0], v[1]);
      });
}

/// Checks the routing weights (and their gradient, where the backward
/// writes it): both or neither, [rows] f32.
Status checkRouting(const TensorView &routing, const TensorView *grad,
                    int64_t rows) {
  if (!routing.data) {
    if (grad && grad->data)
      return Status::error("dRouting is given without the routing weights");
    return Status::ok();
  }
  if (Status s = rt::checkTensor(routing, "routing", DType::F32, {rows}); !s)
    return s;
  if (grad)
    return rt::checkTensor(*grad, "dRouting", DType::F32, {rows});
  return Status::ok();
}

/// Checks x, `out` and every expert's weights (one shape for all); returns
/// the step's sizes. x and `out` are checked once, with expert 0.
rt::StatusOr<MLPShape> checkGroupedOperands(const GroupedMLPWeights &weights,
                                            const TensorView &x,
                                            const TensorView &out,
                                            const char *outName) {
  if (weights.experts.empty())
    return Status::error("a grouped MLP needs at least one expert");
  rt::StatusOr<MLPShape> shape =
      checkMLPOperands(weights.experts[0], x, out, outName);
  if (!shape)
    return weights.experts.size() == 1 ? shape.takeStatus()
                                       : inExpert(0, shape.takeStatus());
  for (size_t e = 1; e < weights.experts.size(); ++e) {
    rt::StatusOr<int64_t> intermediate =
        checkMLPWeights(weights.experts[e], shape->hidden, x.dtype);
    if (!intermediate)
      return inExpert(e, intermediate.takeStatus());
    if (*intermediate != shape->intermediate)
      return Status::error(
          "expert " + std::to_string(e) + " has intermediate size " +
          std::to_string(*intermediate) + " but expert 0 has " +
          std::to_string(shape->intermediate) + "; every expert has one shape");
  }
  return shape;
}

Status checkGroupedGradients(const GroupedMLPGradients &grads, size_t experts,
                             const MLPShape &shape, DType dtype) {
  if (grads.experts.size() != experts)
    return Status::error("main_grad has " +
                         std::to_string(grads.experts.size()) +
                         " experts, the weights " + std::to_string(experts));
  for (size_t e = 0; e < experts; ++e) {
    Status s = checkMLPGradients(grads.experts[e], shape, dtype);
    if (s && grads.experts[e].gate.dtype != grads.experts[0].gate.dtype)
      s = Status::error(
          "main_grad is " + std::string(name(grads.experts[e].gate.dtype)) +
          " but expert 0's is " + name(grads.experts[0].gate.dtype));
    if (!s)
      return experts == 1 ? s : inExpert(e, s);
  }
  return Status::ok();
}

} // namespace tile::ops
