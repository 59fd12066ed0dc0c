//===- TiledMLP.cpp - a sequence-tiled SwiGLU MLP ------------------------===//

#include "tile/Ops/TiledMLP.h"

#include "tile/Ops/GroupedMLP.h"

#include <algorithm>

namespace tile::ops {

using rt::DType;

namespace {
/// The two [I, H] halves of a fused [2I, H] tensor.
rt::StatusOr<std::pair<TensorView, TensorView>>
splitFused(const TensorView &gateUp, const char *what) {
  if (gateUp.shape.size() != 2 || gateUp.shape[0] % 2 != 0)
    return Status::error(std::string("a fused gate/up ") + what +
                         " must be [2I, H], got " +
                         rt::formatShape(gateUp.shape));
  if (!gateUp.isContiguous())
    return Status::error(std::string("the fused gate/up ") + what +
                         " is not contiguous");
  TensorView gate = gateUp, up = gateUp;
  int64_t half = gateUp.shape[0] / 2;
  gate.shape = up.shape = {half, gateUp.shape[1]};
  gate.strides = up.strides = {};
  up.data += static_cast<rt::cu::DevicePtr>(half * gateUp.shape[1]) *
             rt::byteSize(gateUp.dtype);
  return std::make_pair(gate, up);
}
} // namespace

rt::StatusOr<MLPWeights> MLPWeights::fused(const TensorView &gateUp,
                                           const TensorView &down) {
  auto halves = splitFused(gateUp, "weight");
  if (!halves)
    return halves.takeStatus();
  return MLPWeights{halves->first, halves->second, down};
}

rt::StatusOr<MLPGradients> MLPGradients::fused(const TensorView &gateUp,
                                               const TensorView &down) {
  auto halves = splitFused(gateUp, "main_grad");
  if (!halves)
    return halves.takeStatus();
  return MLPGradients{halves->first, halves->second, down};
}

Status checkMLPOptions(const MLPOptions &options) {
  if (options.shards < 0)
    return Status::error("the shard count must be ≥ 0 (0: automatic), not " +
                         std::to_string(options.shards));
  if (options.streams < 1)
    return Status::error("the MLP needs at least one stream for its GEMMs, "
                         "not " +
                         std::to_string(options.streams));
  if (!options.recompute && options.shards > 1)
    return Status::error("the untiled step (recompute = false) keeps every "
                         "row; it cannot have " +
                         std::to_string(options.shards) + " shards");
  return Status::ok();
}

namespace {
/// The streams a step's GEMMs run on: never more than its experts.
int gemmStreamsOf(const MLPOptions &options, int64_t experts) {
  return static_cast<int>(std::min<int64_t>(options.streams, experts));
}
} // namespace

rt::StatusOr<WorkspaceLayout> planWorkspace(int64_t intermediate, DType dtype,
                                            const MLPOptions &options,
                                            int64_t experts) {
  if (intermediate <= 0 || experts <= 0)
    return Status::error("planWorkspace: " + std::to_string(intermediate) +
                         " intermediates, " + std::to_string(experts) +
                         " experts");
  if (Status s = checkMLPOptions(options); !s)
    return s;
  WorkspaceLayout layout;
  layout.fixedBytes = static_cast<size_t>(gemmStreamsOf(options, experts)) *
                      rt::Blas::kWorkspaceBytes;
  layout.rowBytes = static_cast<size_t>(intermediate) * rt::byteSize(dtype);
  return layout;
}

rt::StatusOr<ShardPlan> planShards(int64_t rows, int64_t intermediate,
                                   DType dtype, const MLPOptions &options,
                                   int64_t experts) {
  if (rows < 0)
    return Status::error("planShards: " + std::to_string(rows) + " rows");
  rt::StatusOr<WorkspaceLayout> layout =
      planWorkspace(intermediate, dtype, options, experts);
  if (!layout)
    return layout.takeStatus();
  ShardPlan plan;
  plan.layout = *layout;
  plan.gemmStreams = gemmStreamsOf(options, experts);
  int64_t work = std::max<int64_t>(rows, 1);
  if (!options.recompute) {
    // Its workspace is layout.bytes(rows), exactly: what a caller that
    // knows only the layout (a fake tensor of a symbolic row count) sizes.
    plan.shards = 1;
    plan.rowsPerShard = rows;
  } else if (options.shards > 0) {
    plan.shards = std::min(options.shards, work);
    plan.rowsPerShard = (work + plan.shards - 1) / plan.shards;
  } else {
    // Each buffer may round up by less than its alignment.
    size_t rowBytes = layout->buffers * layout->rowBytes;
    size_t fixed = layout->fixedBytes + layout->buffers * layout->alignment;
    if (options.memoryBudgetBytes < fixed + rowBytes)
      return Status::error(
          "a memory budget of " + std::to_string(options.memoryBudgetBytes) +
          " bytes cannot hold one row's intermediates (" +
          std::to_string(rowBytes) + " bytes) and cuBLASLt's workspace (" +
          std::to_string(fixed) + " bytes)");
    int64_t most =
        static_cast<int64_t>((options.memoryBudgetBytes - fixed) / rowBytes);
    int64_t shards = (work + most - 1) / most;
    int64_t even = (work + shards - 1) / shards;
    // Whole 64-row blocks keep every shard's rows aligned for the GEMMs,
    // where the budget allows.
    int64_t rounded = (even + 63) / 64 * 64;
    plan.rowsPerShard = rounded <= most ? rounded : even;
    plan.shards = (work + plan.rowsPerShard - 1) / plan.rowsPerShard;
  }
  return plan;
}

namespace {
int64_t leadingRows(const TensorView &view) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < view.shape.size(); ++i)
    rows *= view.shape[i];
  return rows;
}
} // namespace

rt::StatusOr<int64_t> checkMLPWeights(const MLPWeights &weights, int64_t hidden,
                                      DType dtype) {
  if (weights.gate.shape.size() != 2)
    return Status::error("the gate weight must be [I, H], got " +
                         rt::formatShape(weights.gate.shape));
  int64_t H = hidden, I = weights.gate.shape[0];
  if (H == 0 || I == 0)
    return Status::error("the MLP needs H > 0 and I > 0, got H = " +
                         std::to_string(H) + ", I = " + std::to_string(I));
  if (Status s =
          rt::checkTensor(weights.gate, "the gate weight", dtype, {I, H});
      !s)
    return s;
  if (Status s = rt::checkTensor(weights.up, "the up weight", dtype, {I, H});
      !s)
    return s;
  if (Status s =
          rt::checkTensor(weights.down, "the down weight", dtype, {H, I});
      !s)
    return s;
  return I;
}

rt::StatusOr<MLPShape> checkMLPOperands(const MLPWeights &weights,
                                        const TensorView &x,
                                        const TensorView &out,
                                        const char *outName) {
  if (x.shape.empty())
    return Status::error("the MLP's x must be [..., H], not a scalar");
  DType dtype = x.dtype;
  if (Status s = rt::checkTensor(x, "x", dtype, x.shape); !s)
    return s;
  MLPShape shape;
  shape.rows = leadingRows(x);
  shape.hidden = x.shape.back();
  rt::StatusOr<int64_t> intermediate =
      checkMLPWeights(weights, shape.hidden, dtype);
  if (!intermediate)
    return intermediate.takeStatus();
  shape.intermediate = *intermediate;
  if (Status s = rt::checkTensor(out, outName, dtype, x.shape); !s)
    return s;
  return shape;
}

Status checkMLPGradients(const MLPGradients &grads, const MLPShape &shape,
                         DType dtype) {
  int64_t H = shape.hidden, I = shape.intermediate;
  // fp32, or the weights' dtype: gate's decides, the others follow it.
  DType type = grads.gate.dtype == dtype ? dtype : DType::F32;
  if (Status s = rt::checkTensor(grads.gate, "main_grad of the gate weight",
                                 type, {I, H});
      !s)
    return s;
  if (Status s =
          rt::checkTensor(grads.up, "main_grad of the up weight", type, {I, H});
      !s)
    return s;
  return rt::checkTensor(grads.down, "main_grad of the down weight", type,
                         {H, I});
}

TiledSwiGLUMLP::TiledSwiGLUMLP(std::unique_ptr<GroupedSwiGLUMLP> grouped)
    : grouped(std::move(grouped)) {}
TiledSwiGLUMLP::~TiledSwiGLUMLP() = default;

rt::StatusOr<std::unique_ptr<TiledSwiGLUMLP>>
TiledSwiGLUMLP::create(Operators &ops, MLPOptions options) {
  // One expert: its GEMMs never run side by side, so no side streams.
  options.streams = 1;
  auto grouped = GroupedSwiGLUMLP::create(ops, options);
  if (!grouped)
    return grouped.takeStatus();
  return std::unique_ptr<TiledSwiGLUMLP>(
      new TiledSwiGLUMLP(std::move(*grouped)));
}

namespace {
/// The one split of a one-expert step: every row of x.
std::vector<int64_t> allRows(const TensorView &x) {
  return {x.shape.empty() ? 0 : leadingRows(x)};
}
} // namespace

Status TiledSwiGLUMLP::forward(const MLPWeights &weights, const TensorView &x,
                               const TensorView &y, const RunOptions &run) {
  return grouped->forward({{weights}}, x, allRows(x), y, run);
}

Status TiledSwiGLUMLP::backward(const MLPWeights &weights, const TensorView &x,
                                const TensorView &dy, const TensorView &dx,
                                const MLPGradients &mainGrad, bool overwrite,
                                const RunOptions &run) {
  return grouped->backward({{weights}}, x, allRows(x), dy, dx, {{mainGrad}},
                           overwrite, run);
}

const ShardPlan &TiledSwiGLUMLP::lastPlan() const {
  return grouped->lastPlan();
}
size_t TiledSwiGLUMLP::workspaceBytes() const {
  return grouped->workspaceBytes();
}
void TiledSwiGLUMLP::releaseWorkspace() { grouped->releaseWorkspace(); }

} // namespace tile::ops
