//===- ExpertGemms.cpp - a step's GEMMs over every expert at once ---------===//

#include "ExpertGemms.h"

namespace tile::ops {

namespace {

/// The first row of every expert, and T after the last: offsets[e] to
/// offsets[e + 1] are expert e's rows.
rt::StatusOr<std::vector<int64_t>> offsetsOf(const std::vector<int64_t> &splits,
                                             size_t experts, int64_t rows) {
  if (splits.size() != experts)
    return Status::error("the grouped MLP has " + std::to_string(experts) +
                         " experts but " + std::to_string(splits.size()) +
                         " splits");
  std::vector<int64_t> offsets{0};
  for (size_t e = 0; e < experts; ++e) {
    if (splits[e] < 0)
      return Status::error("split " + std::to_string(e) + " is " +
                           std::to_string(splits[e]) +
                           "; a split counts tokens, ≥ 0");
    if (splits[e] > rows - offsets.back())
      return Status::error("the splits add up to more than the " +
                           std::to_string(rows) + " rows of x (at split " +
                           std::to_string(e) + ")");
    offsets.push_back(offsets.back() + splits[e]);
  }
  if (offsets.back() != rows)
    return Status::error("the splits add up to " +
                         std::to_string(offsets.back()) + " but x has " +
                         std::to_string(rows) + " rows");
  return offsets;
}

Status checkDeviceSplits(const TensorView &counts, size_t experts) {
  if (!counts.data || counts.data % rt::byteSize(counts.dtype))
    return Status::error("the splits on the device are null or not aligned "
                         "to their type");
  if (counts.dtype != rt::DType::I32 && counts.dtype != rt::DType::I64)
    return Status::error(std::string("the splits on the device must be "
                                     "int32 or int64, not ") +
                         rt::name(counts.dtype));
  if (counts.shape != std::vector<int64_t>{static_cast<int64_t>(experts)} ||
      !counts.isContiguous())
    return Status::error("the splits on the device must be a contiguous [" +
                         std::to_string(experts) + "] tensor, got " +
                         rt::formatShape(counts.shape));
  return Status::ok();
}

/// Device splits read on the host: waits for `stream` (the splits'
/// producer), the one synchronization of a per-segment step.
rt::StatusOr<std::vector<int64_t>> copyToHost(const rt::Device &device,
                                              const TensorView &counts,
                                              rt::cu::Stream stream) {
  rt::ContextScope scope(device);
  if (!scope.status())
    return scope.status();
  size_t n = static_cast<size_t>(counts.shape[0]);
  size_t bytes = n * rt::byteSize(counts.dtype);
  std::vector<unsigned char> raw(bytes);
  const rt::DriverApi &api = device.driver();
  if (Status s = rt::check(api.streamSynchronize(stream),
                           "cuStreamSynchronize (device splits)");
      !s)
    return s;
  if (Status s = rt::check(api.memcpyDtoH(raw.data(), counts.data, bytes),
                           "cuMemcpyDtoH (device splits)");
      !s)
    return s;
  std::vector<double> values = rt::decode(counts.dtype, raw.data(), n);
  return std::vector<int64_t>(values.begin(), values.end());
}

/// The experts' matrices `pick(expert)` as one evenly spaced stack, if
/// they are one.
template <typename Expert, typename Pick>
std::optional<rt::ExpertMatrices> stackOf(const std::vector<Expert> &experts,
                                          Pick pick) {
  const TensorView &first = pick(experts[0]);
  if (first.shape.size() != 2 || !first.isContiguous())
    return std::nullopt;
  auto bytes = static_cast<int64_t>(rt::byteSize(first.dtype));
  int64_t stride = first.shape[0] * first.shape[1];
  if (experts.size() > 1) {
    auto gap = static_cast<int64_t>(pick(experts[1]).data - first.data);
    if (gap <= 0 || gap % bytes)
      return std::nullopt;
    stride = gap / bytes;
  }
  for (size_t e = 0; e < experts.size(); ++e)
    if (pick(experts[e]).data !=
        first.data + static_cast<rt::cu::DevicePtr>(e * stride * bytes))
      return std::nullopt;
  return rt::ExpertMatrices{first.data, first.shape[1], stride};
}

/// `gate` and `up` as one [2·rows, ld] matrix per expert, if up's rows
/// follow gate's (`rows` of them) in one stack: Hugging
/// Face's gate_up_proj, [E, 2I, H]. (With one expert its stride says
/// nothing: stackOf gives it one expert's size.)
std::optional<rt::ExpertMatrices> gateUpStack(const rt::ExpertMatrices &gate,
                                              const rt::ExpertMatrices &up,
                                              int64_t rows, int64_t experts) {
  constexpr int64_t bytes = 2; // bf16: the grouped path's only dtype
  int64_t both = 2 * rows * gate.ld;
  int64_t stride = experts == 1 ? both : gate.expertStride;
  if (up.ld != gate.ld || up.expertStride != gate.expertStride ||
      stride < both ||
      up.data !=
          gate.data + static_cast<rt::cu::DevicePtr>(rows * gate.ld * bytes))
    return std::nullopt;
  return rt::ExpertMatrices{gate.data, gate.ld, stride};
}

} // namespace

rt::StatusOr<ExpertGemms>
ExpertGemms::resolve(const rt::Device &device, const GroupedMLPWeights &weights,
                     const GroupedMLPGradients *grads,
                     const ExpertSplits &splits, const MLPShape &shape,
                     rt::DType dtype,
                     std::initializer_list<const TensorView *> tokens,
                     size_t scratchBytes, rt::cu::Stream stream) {
  ExpertGemms g;
  g.device = &device;
  g.experts = static_cast<int64_t>(weights.experts.size());
  g.rows = shape.rows;
  g.hidden = shape.hidden;
  g.intermediate = shape.intermediate;
  g.stream = stream;
  if (splits.onDevice()) {
    if (Status s = checkDeviceSplits(splits.device, weights.experts.size()); !s)
      return s;
    g.deviceCounts = splits.device.data;
    g.deviceType = splits.device.dtype;
  } else {
    rt::StatusOr<std::vector<int64_t>> offsets =
        offsetsOf(splits.host, weights.experts.size(), shape.rows);
    if (!offsets)
      return offsets.takeStatus();
    g.hostOffsets = std::move(*offsets);
    g.hostCounts = splits.host;
  }

  auto gateOf = [](const auto &w) -> const TensorView & { return w.gate; };
  auto upOf = [](const auto &w) -> const TensorView & { return w.up; };
  auto downOf = [](const auto &w) -> const TensorView & { return w.down; };
  auto gateStack = stackOf(weights.experts, gateOf);
  auto upStack = stackOf(weights.experts, upOf);
  auto downStack = stackOf(weights.experts, downOf);
  bool stacked = gateStack && upStack && downStack;
  if (stacked && grads) {
    auto gg = stackOf(grads->experts, gateOf);
    auto gu = stackOf(grads->experts, upOf);
    auto gd = stackOf(grads->experts, downOf);
    stacked = gg && gu && gd;
    if (stacked) {
      g.gradGate = *gg;
      g.gradUp = *gu;
      g.gradDown = *gd;
      g.gradType = grads->experts[0].gate.dtype;
    }
  }
  // TMA's 16-byte alignment, of the token rows and of every stack (a
  // flat parameter or gradient buffer may hold them anywhere): else the
  // reference path.
  bool aligned = true;
  for (const TensorView *t : tokens)
    aligned = aligned && t->data % 16 == 0;
  for (const auto &stack : {gateStack, upStack, downStack})
    aligned = aligned && (!stack || rt::GroupedGemm::aligned(*stack, 2));
  if (grads && stacked)
    for (const rt::ExpertMatrices *stack :
         {&g.gradGate, &g.gradUp, &g.gradDown})
      aligned =
          aligned && rt::GroupedGemm::aligned(*stack, rt::byteSize(g.gradType));
  // One expert on host splits is the dense MLP: cuBLASLt serves it as well.
  // An empty batch has nothing to compute (an overwrite's zeroing is the
  // step's own).
  g.isGrouped =
      shape.rows > 0 && rt::GroupedGemm::available(device) &&
      dtype == rt::DType::BF16 && shape.hidden % 8 == 0 &&
      shape.intermediate % 8 == 0 && stacked && aligned &&
      (g.experts > 1 || splits.onDevice()) &&
      g.experts <= rt::GroupedGemm::kMaxExperts &&
      rt::GroupedGemm::scratchBytes(device, g.experts) <= scratchBytes;
  if (g.isGrouped) {
    g.gate = *gateStack;
    g.up = *upStack;
    g.downW = *downStack;
    g.gateUpWeights = gateUpStack(g.gate, g.up, shape.intermediate, g.experts);
    return g;
  }
  if (splits.onDevice() && shape.rows == 0) {
    // Nothing to compute (an overwrite zeroes every expert's main_grad):
    // the counts are not read, so an empty batch waits for nothing either.
    g.hostOffsets.assign(weights.experts.size() + 1, 0);
  } else if (splits.onDevice()) {
    rt::StatusOr<std::vector<int64_t>> host =
        copyToHost(device, splits.device, stream);
    if (!host)
      return host.takeStatus();
    rt::StatusOr<std::vector<int64_t>> offsets =
        offsetsOf(*host, weights.experts.size(), shape.rows);
    if (!offsets)
      return offsets.takeStatus();
    g.hostOffsets = std::move(*offsets);
  }
  return g;
}

rt::ExpertCounts ExpertGemms::counts() const {
  rt::ExpertCounts c;
  c.device = deviceCounts;
  c.deviceType = deviceType;
  c.host = deviceCounts ? nullptr : hostCounts.data();
  c.experts = experts;
  c.rows = rows;
  return c;
}

RowsOf ExpertGemms::half(const RowsOf &gu, int64_t offset) const {
  // bf16: the grouped path's only dtype.
  return {gu.data + static_cast<rt::cu::DevicePtr>(offset * 2), gu.ld,
          gu.firstRow};
}

Status ExpertGemms::gateUp(const RowsOf &x, const RowsOf &gu,
                           rt::RowWindow window) const {
  if (gateUpWeights) {
    rt::RowOperands p{x, *gateUpWeights, gu};
    return rt::GroupedGemm::project(*device, counts(), window, &p, 1,
                                    2 * intermediate, hidden, scratch, stream);
  }
  rt::RowOperands p[2] = {{x, gate, half(gu, 0)},
                          {x, up, half(gu, intermediate)}};
  return rt::GroupedGemm::project(*device, counts(), window, p, 2, intermediate,
                                  hidden, scratch, stream);
}

Status ExpertGemms::down(const RowsOf &h, const RowsOf &y,
                         rt::RowWindow window) const {
  rt::RowOperands p{h, downW, y};
  return rt::GroupedGemm::project(*device, counts(), window, &p, 1, hidden,
                                  intermediate, scratch, stream);
}

Status ExpertGemms::backDown(const RowsOf &dy, const RowsOf &dh,
                             rt::RowWindow window) const {
  rt::RowOperands p{dy, downW, dh};
  return rt::GroupedGemm::back(*device, counts(), window, &p, 1, intermediate,
                               hidden, 0.0f, scratch, stream);
}

Status ExpertGemms::backGateUp(const RowsOf &dgu, const RowsOf &dx,
                               rt::RowWindow window) const {
  if (gateUpWeights) {
    rt::RowOperands p{dgu, *gateUpWeights, dx};
    return rt::GroupedGemm::back(*device, counts(), window, &p, 1, hidden,
                                 2 * intermediate, 0.0f, scratch, stream);
  }
  rt::RowOperands fromGate{half(dgu, 0), gate, dx},
      fromUp{half(dgu, intermediate), up, dx};
  if (Status s =
          rt::GroupedGemm::back(*device, counts(), window, &fromGate, 1, hidden,
                                intermediate, 0.0f, scratch, stream);
      !s)
    return s;
  return rt::GroupedGemm::back(*device, counts(), window, &fromUp, 1, hidden,
                               intermediate, 1.0f, scratch, stream);
}

Status ExpertGemms::weightsDown(const RowsOf &dy, const RowsOf &h,
                                rt::RowWindow window, bool overwrite) const {
  rt::WeightOperands p{dy, h, gradDown};
  return rt::GroupedGemm::weights(*device, counts(), window, &p, 1, hidden,
                                  intermediate, overwrite, gradType, scratch,
                                  stream);
}

Status ExpertGemms::weightsGateUp(const RowsOf &dgu, const RowsOf &x,
                                  rt::RowWindow window, bool overwrite) const {
  // Two groups even where main_grad is one gate_up stack: one group of
  // 2I rows was ~1 ms slower at I = 14336 and no faster at I = 1536
  // (docs/Performance.md, session 25).
  rt::WeightOperands p[2] = {{half(dgu, 0), x, gradGate},
                             {half(dgu, intermediate), x, gradUp}};
  return rt::GroupedGemm::weights(*device, counts(), window, p, 2, intermediate,
                                  hidden, overwrite, gradType, scratch, stream);
}

} // namespace tile::ops
