//===- TiledMLP.cpp - a sequence-tiled SwiGLU MLP ------------------------===//

#include "tile/Ops/TiledMLP.h"

#include <algorithm>

namespace tile::ops {

using rt::DType;
using rt::MatrixView;
using rt::Operand;

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

namespace {
/// The bytes of one [rows, I] buffer of a shard, rounded up to 256: cuBLASLt
/// refuses a workspace that is not 256-byte aligned (CUBLAS_STATUS_INVALID_
/// VALUE) and its fast kernels want aligned operands.
size_t shardBlockBytes(int64_t rows, int64_t intermediate, DType dtype) {
  size_t bytes = static_cast<size_t>(rows * intermediate) * rt::byteSize(dtype);
  return (bytes + 255) / 256 * 256;
}

Status checkOptions(const MLPOptions &options) {
  if (options.shards < 0)
    return Status::error("the shard count must be ≥ 0 (0: automatic), not " +
                         std::to_string(options.shards));
  if (!options.recompute && options.shards > 1)
    return Status::error("the untiled step (recompute = false) keeps every "
                         "row; it cannot have " +
                         std::to_string(options.shards) + " shards");
  return Status::ok();
}
} // namespace

rt::StatusOr<ShardPlan> planShards(int64_t rows, int64_t intermediate,
                                   DType dtype, const MLPOptions &options) {
  if (rows < 0 || intermediate <= 0)
    return Status::error("planShards: " + std::to_string(rows) + " rows of " +
                         std::to_string(intermediate) + " intermediates");
  if (Status s = checkOptions(options); !s)
    return s;
  // g, u and h of one row (each buffer may round up by < 256 bytes).
  size_t rowBytes = 3 * static_cast<size_t>(intermediate) * rt::byteSize(dtype);
  ShardPlan plan;
  int64_t work = std::max<int64_t>(rows, 1);
  if (!options.recompute) {
    plan.shards = 1;
    plan.rowsPerShard = work;
  } else if (options.shards > 0) {
    plan.shards = std::min(options.shards, work);
    plan.rowsPerShard = (work + plan.shards - 1) / plan.shards;
  } else {
    size_t fixed = rt::Blas::kWorkspaceBytes + 3 * 256;
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
  plan.workspaceBytes =
      rt::Blas::kWorkspaceBytes +
      3 * shardBlockBytes(plan.rowsPerShard, intermediate, dtype);
  return plan;
}

namespace {
int64_t leadingRows(const TensorView &view) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < view.shape.size(); ++i)
    rows *= view.shape[i];
  return rows;
}

/// Rows [first, first + rows) of a contiguous [*, cols] tensor.
MatrixView rowsOf(const TensorView &view, int64_t first, int64_t rows,
                  int64_t cols) {
  return {view.data + static_cast<rt::cu::DevicePtr>(first * cols) *
                          rt::byteSize(view.dtype),
          view.dtype, rows, cols, cols};
}

MatrixView matrix(const TensorView &view) {
  return rowsOf(view, 0, view.shape[0], view.shape[1]);
}

/// How the SwiGLU kernels of a step run: on its stream, with no workspace
/// (elementwise kernels need none; the launcher allocates nothing for them).
RunOptions kernelRun(const RunOptions &run) {
  RunOptions kernels;
  kernels.stream = run.stream;
  kernels.callerWorkspace = true;
  return kernels;
}

/// The operators' view of a workspace matrix.
TensorView tensorOf(const MatrixView &m) {
  TensorView view;
  view.data = m.data;
  view.shape = {m.rows, m.cols};
  view.dtype = m.dtype;
  return view;
}
} // namespace

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
  if (weights.gate.shape.size() != 2)
    return Status::error("the gate weight must be [I, H], got " +
                         rt::formatShape(weights.gate.shape));
  shape.intermediate = weights.gate.shape[0];
  int64_t H = shape.hidden, I = shape.intermediate;
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
  if (Status s = rt::checkTensor(out, outName, dtype, x.shape); !s)
    return s;
  return shape;
}

Status checkMLPGradients(const MLPGradients &grads, const MLPShape &shape) {
  int64_t H = shape.hidden, I = shape.intermediate;
  if (Status s = rt::checkTensor(grads.gate, "main_grad of the gate weight",
                                 DType::F32, {I, H});
      !s)
    return s;
  if (Status s = rt::checkTensor(grads.up, "main_grad of the up weight",
                                 DType::F32, {I, H});
      !s)
    return s;
  return rt::checkTensor(grads.down, "main_grad of the down weight", DType::F32,
                         {H, I});
}

rt::StatusOr<std::unique_ptr<TiledSwiGLUMLP>>
TiledSwiGLUMLP::create(Operators &ops, MLPOptions options) {
  if (Status s = checkOptions(options); !s)
    return s;
  rt::StatusOr<std::unique_ptr<rt::Blas>> blas = rt::Blas::open(ops.device());
  if (!blas)
    return blas.takeStatus();
  return std::unique_ptr<TiledSwiGLUMLP>(
      new TiledSwiGLUMLP(ops, std::move(*blas), options));
}

void TiledSwiGLUMLP::releaseWorkspace() {
  workspace = rt::DeviceBuffer();
  base = keptInput = keptBase = 0;
  keptRows = 0;
}

Status TiledSwiGLUMLP::prepare(const MLPShape &shape, DType dtype,
                               const RunOptions &run) {
  rt::StatusOr<ShardPlan> planned =
      planShards(shape.rows, shape.intermediate, dtype, options);
  if (!planned)
    return planned.takeStatus();
  plan = *planned;
  if (run.callerWorkspace) {
    if (!run.workspace || run.workspaceBytes < plan.workspaceBytes)
      return Status::error("the MLP needs a workspace of " +
                           std::to_string(plan.workspaceBytes) + " bytes, " +
                           std::to_string(run.workspaceBytes) + " given");
    if (run.workspace % 256 != 0)
      return Status::error("the MLP's workspace is misaligned: address " +
                           std::to_string(run.workspace) +
                           " is not a multiple of 256 bytes (cuBLASLt's "
                           "requirement)");
    base = run.workspace;
    return Status::ok();
  }
  if (workspace.size() >= plan.workspaceBytes) {
    base = workspace.data();
    return Status::ok();
  }
  // Grown at most once per step, never per shard; the old one goes first
  // so the two never coexist.
  releaseWorkspace();
  rt::StatusOr<rt::DeviceBuffer> buffer =
      rt::DeviceBuffer::allocate(ops.device(), plan.workspaceBytes);
  if (!buffer)
    return Status::error("the MLP's workspace (" +
                         std::to_string(plan.workspaceBytes) +
                         " bytes): " + buffer.message());
  workspace = std::move(*buffer);
  base = workspace.data();
  return Status::ok();
}

/// One shard: its rows of the caller's tensors and its part of the
/// workspace: cuBLASLt's workspace first, then g, u and h, [rows, I] each,
/// every one 256-byte aligned.
struct TiledSwiGLUMLP::Shard {
  int64_t first = 0, rows = 0;
  MatrixView g, u, h;
};

TiledSwiGLUMLP::Shard TiledSwiGLUMLP::shard(const MLPShape &shape, DType dtype,
                                            int64_t index) const {
  Shard s;
  s.first = index * plan.rowsPerShard;
  s.rows = std::min(plan.rowsPerShard, shape.rows - s.first);
  int64_t I = shape.intermediate;
  size_t block = shardBlockBytes(plan.rowsPerShard, I, dtype);
  rt::cu::DevicePtr first = base + rt::Blas::kWorkspaceBytes;
  s.g = {first, dtype, s.rows, I, I};
  s.u = {first + block, dtype, s.rows, I, I};
  s.h = {first + 2 * block, dtype, s.rows, I, I};
  return s;
}

Status TiledSwiGLUMLP::gemm(const Operand &a, const Operand &b,
                            const MatrixView &d, float beta,
                            const RunOptions &run) {
  // Every shard shares one cuBLASLt workspace: the GEMMs run in order on
  // one stream.
  return blas->matmul(a, b, d, beta, base, run.stream);
}

Status TiledSwiGLUMLP::product(const Shard &s, bool separate,
                               const RunOptions &run) {
  // h = swiglu(g, u): in its own buffer when the backward still needs g and
  // u, in place over g otherwise (Operators' elementwise kernels may run in
  // place).
  return ops.swigluForward(tensorOf(s.g), tensorOf(s.u),
                           tensorOf(separate ? s.h : s.g), kernelRun(run));
}

Status TiledSwiGLUMLP::forward(const MLPWeights &weights, const TensorView &x,
                               const TensorView &y, const RunOptions &run) {
  rt::StatusOr<MLPShape> checked = checkMLPOperands(weights, x, y, "y");
  if (!checked)
    return checked.takeStatus();
  MLPShape shape = *checked;
  if (shape.rows == 0)
    return Status::ok();
  if (Status s = prepare(shape, x.dtype, run); !s)
    return s;
  if (Status s = ops.device().makeCurrent(); !s)
    return s;
  int64_t H = shape.hidden;
  MatrixView gate = matrix(weights.gate), up = matrix(weights.up),
             down = matrix(weights.down);
  for (int64_t index = 0; index < plan.shards; ++index) {
    Shard s = shard(shape, x.dtype, index);
    MatrixView xs = rowsOf(x, s.first, s.rows, H);
    if (Status st = gemm({xs}, {gate, true}, s.g, 0.0f, run); !st)
      return st;
    if (Status st = gemm({xs}, {up, true}, s.u, 0.0f, run); !st)
      return st;
    // The untiled step keeps g and u for its backward.
    bool keep = !options.recompute;
    if (Status st = product(s, keep, run); !st)
      return st;
    if (Status st = gemm({keep ? s.h : s.g}, {down, true},
                         rowsOf(y, s.first, s.rows, H), 0.0f, run);
        !st)
      return st;
  }
  keptInput = options.recompute ? 0 : x.data;
  keptBase = options.recompute ? 0 : base;
  keptRows = options.recompute ? 0 : shape.rows;
  return Status::ok();
}

Status TiledSwiGLUMLP::backward(const MLPWeights &weights, const TensorView &x,
                                const TensorView &dy, const TensorView &dx,
                                const MLPGradients &mainGrad, bool overwrite,
                                const RunOptions &run) {
  rt::StatusOr<MLPShape> checked = checkMLPOperands(weights, x, dy, "dy");
  if (!checked)
    return checked.takeStatus();
  MLPShape shape = *checked;
  if (Status s = rt::checkTensor(dx, "dx", x.dtype, x.shape); !s)
    return s;
  if (Status s = checkMLPGradients(mainGrad, shape); !s)
    return s;
  if (shape.rows == 0) {
    // No rows: the gradients are zero.
    if (!overwrite)
      return Status::ok();
    if (Status s = ops.device().makeCurrent(); !s)
      return s;
    for (const TensorView *g : {&mainGrad.gate, &mainGrad.up, &mainGrad.down})
      if (Status s =
              rt::check(ops.device().driver().memsetD8Async(
                            g->data, 0, g->numElements() * 4, run.stream),
                        "cuMemsetD8Async (main_grad)");
          !s)
        return s;
    return Status::ok();
  }
  if (Status s = prepare(shape, x.dtype, run); !s)
    return s;
  if (!options.recompute &&
      (keptInput != x.data || keptRows != shape.rows || keptBase != base))
    return Status::error("the untiled backward (recompute = false) needs the "
                         "forward of the same x, with the same workspace, "
                         "first: it keeps g, u and h");
  if (Status s = ops.device().makeCurrent(); !s)
    return s;
  int64_t H = shape.hidden;
  MatrixView gate = matrix(weights.gate), up = matrix(weights.up),
             down = matrix(weights.down);
  MatrixView gradGate = matrix(mainGrad.gate), gradUp = matrix(mainGrad.up),
             gradDown = matrix(mainGrad.down);
  for (int64_t index = 0; index < plan.shards; ++index) {
    Shard s = shard(shape, x.dtype, index);
    MatrixView xs = rowsOf(x, s.first, s.rows, H);
    MatrixView dys = rowsOf(dy, s.first, s.rows, H);
    MatrixView dxs = rowsOf(dx, s.first, s.rows, H);
    // beta = 0 on the first shard of an overwriting call: main_grad is
    // replaced, never read (a NaN in it is harmless).
    float beta = overwrite && index == 0 ? 0.0f : 1.0f;
    if (options.recompute) {
      // The gate/up projections again; not the down projection, whose
      // output the backward never needs.
      if (Status st = gemm({xs}, {gate, true}, s.g, 0.0f, run); !st)
        return st;
      if (Status st = gemm({xs}, {up, true}, s.u, 0.0f, run); !st)
        return st;
      // dh = dy · down into h's buffer; then one pass over g, u and dh
      // (the derived backward with return-primal) leaves dg over g, du
      // over u and h = swiglu(g, u) over dh: h costs no pass of its own.
      if (Status st = gemm({dys}, {down}, s.h, 0.0f, run); !st)
        return st;
      TensorView g = tensorOf(s.g), u = tensorOf(s.u), h = tensorOf(s.h);
      if (Status st =
              ops.swigluBackwardWithForward(g, u, h, g, u, h, kernelRun(run));
          !st)
        return st;
      // main_grad(down) [H, I] += dyᵀ · h.
      if (Status st = gemm({dys, true}, {s.h}, gradDown, beta, run); !st)
        return st;
    } else {
      // The untiled step kept h: main_grad(down) += dyᵀ · h, then dh over
      // h, then dg, du over g, u.
      if (Status st = gemm({dys, true}, {s.h}, gradDown, beta, run); !st)
        return st;
      if (Status st = gemm({dys}, {down}, s.h, 0.0f, run); !st)
        return st;
      TensorView g = tensorOf(s.g), u = tensorOf(s.u);
      if (Status st =
              ops.swigluBackward(g, u, tensorOf(s.h), g, u, kernelRun(run));
          !st)
        return st;
    }
    // dx = dg · gate + du · up.
    if (Status st = gemm({s.g}, {gate}, dxs, 0.0f, run); !st)
      return st;
    if (Status st = gemm({s.u}, {up}, dxs, 1.0f, run); !st)
      return st;
    // main_grad(gate) [I, H] += dgᵀ · x, main_grad(up) += duᵀ · x.
    if (Status st = gemm({s.g, true}, {xs}, gradGate, beta, run); !st)
      return st;
    if (Status st = gemm({s.u, true}, {xs}, gradUp, beta, run); !st)
      return st;
  }
  // The untiled step's g, u and h are spent (now dg, du and dh).
  keptInput = keptBase = 0;
  keptRows = 0;
  return Status::ok();
}

} // namespace tile::ops
