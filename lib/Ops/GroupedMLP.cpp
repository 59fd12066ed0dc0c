//===- GroupedMLP.cpp - a grouped (mixture-of-experts) SwiGLU MLP ---------===//
//
// The step of GroupedMLP.h: shards of token rows, each cut into per-expert
// segments. The dense TiledSwiGLUMLP runs through here with one expert, so
// every GEMM and kernel of its step is the one this file queues.
//
//===----------------------------------------------------------------------===//

#include "tile/Ops/GroupedMLP.h"

#include "ExpertGemms.h"
#include "GroupedMLPOperands.h"

#include <algorithm>

namespace tile::ops {

using rt::DType;
using rt::MatrixView;
using rt::Operand;

namespace {

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

/// Rows [first, first + rows) of a workspace matrix.
MatrixView slice(const MatrixView &m, int64_t first, int64_t rows) {
  MatrixView part = m;
  part.data +=
      static_cast<rt::cu::DevicePtr>(first * m.ld) * rt::byteSize(m.dtype);
  part.rows = rows;
  return part;
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

/// Rows [first, first + rows) of a [T] vector.
TensorView rowsOfVector(const TensorView &v, int64_t first, int64_t rows) {
  TensorView part = v;
  part.data += static_cast<rt::cu::DevicePtr>(first) * rt::byteSize(v.dtype);
  part.shape = {rows};
  part.strides = {};
  return part;
}

} // namespace

rt::StatusOr<std::unique_ptr<GroupedSwiGLUMLP>>
GroupedSwiGLUMLP::create(Operators &ops, MLPOptions options) {
  if (Status s = checkMLPOptions(options); !s)
    return s;
  rt::StatusOr<std::unique_ptr<rt::Blas>> blas = rt::Blas::open(ops.device());
  if (!blas)
    return blas.takeStatus();
  rt::StatusOr<std::unique_ptr<rt::StreamFork>> lanes =
      rt::StreamFork::create(ops.device(), options.streams);
  if (!lanes)
    return lanes.takeStatus();
  return std::unique_ptr<GroupedSwiGLUMLP>(
      new GroupedSwiGLUMLP(ops, std::move(*blas), std::move(*lanes), options));
}

GroupedSwiGLUMLP::GroupedSwiGLUMLP(Operators &ops,
                                   std::unique_ptr<rt::Blas> blas,
                                   std::unique_ptr<rt::StreamFork> lanes,
                                   MLPOptions options)
    : ops(ops), blas(std::move(blas)), lanes(std::move(lanes)),
      options(options) {}

GroupedSwiGLUMLP::~GroupedSwiGLUMLP() = default;

void GroupedSwiGLUMLP::releaseWorkspace() {
  forget(workspace.data());
  workspace = rt::DeviceBuffer();
  base = 0;
}

void GroupedSwiGLUMLP::remember(int64_t rows, bool routed) {
  forget(base);
  // Bounded: a forward whose backward never comes (an abandoned graph)
  // must not make the record grow. A backward whose forward was dropped
  // here fails with a message, never runs on stale g, u and h.
  if (kept.size() >= kMaxKeptSteps)
    kept.erase(kept.begin());
  kept.push_back({base, rows, routed, scratchBase != 0});
}

std::vector<GroupedSwiGLUMLP::Kept>::iterator
GroupedSwiGLUMLP::keptIn(rt::cu::DevicePtr workspaceBase) {
  return std::find_if(kept.begin(), kept.end(), [&](const Kept &k) {
    return k.workspace == workspaceBase;
  });
}

void GroupedSwiGLUMLP::forget(rt::cu::DevicePtr workspaceBase) {
  if (auto it = keptIn(workspaceBase); it != kept.end())
    kept.erase(it);
}

Status GroupedSwiGLUMLP::prepare(const MLPShape &shape, DType dtype,
                                 size_t experts, const RunOptions &run) {
  rt::StatusOr<ShardPlan> planned =
      planShards(shape.rows, shape.intermediate, dtype, options,
                 static_cast<int64_t>(experts));
  if (!planned)
    return planned.takeStatus();
  plan = *planned;
  // A scratch apart: the workspace holds the untiled step's kept buffers
  // (g, u), the scratch the lanes and h.
  bool apart = run.scratch || run.scratchBytes;
  scratchBase = apart ? run.scratch : 0;
  if (apart && (options.recompute || !run.callerWorkspace))
    return Status::error("a scratch apart from the workspace is for the "
                         "untiled step (recompute = false) with a "
                         "caller's workspace, which it keeps g and u in");
  if (run.callerWorkspace) {
    size_t needed = apart ? plan.layout.keptBytes(plan.rowsPerShard)
                          : plan.workspaceBytes();
    if (!run.workspace || run.workspaceBytes < needed)
      return Status::error("the MLP needs a workspace of " +
                           std::to_string(needed) + " bytes" +
                           (apart ? " (with a scratch apart)" : "") + ", " +
                           std::to_string(run.workspaceBytes) + " given");
    size_t scratchNeeded = plan.layout.scratchBytes(plan.rowsPerShard);
    if (apart && (!run.scratch || run.scratchBytes < scratchNeeded))
      return Status::error("the MLP needs a scratch of " +
                           std::to_string(scratchNeeded) + " bytes, " +
                           std::to_string(run.scratchBytes) + " given");
    for (auto [what, at] :
         {std::pair{"workspace", run.workspace}, {"scratch", scratchBase}})
      if (at % 256 != 0)
        return Status::error(std::string("the MLP's ") + what +
                             " is misaligned: address " + std::to_string(at) +
                             " is not a multiple of 256 bytes (cuBLASLt's "
                             "requirement)");
    base = run.workspace;
    return Status::ok();
  }
  if (workspace.size() >= plan.workspaceBytes()) {
    base = workspace.data();
    return Status::ok();
  }
  // Grown at most once per step, never per shard; the old one goes first
  // so the two never coexist.
  releaseWorkspace();
  rt::StatusOr<rt::DeviceBuffer> buffer =
      rt::DeviceBuffer::allocate(ops.device(), plan.workspaceBytes());
  if (!buffer)
    return Status::error("the MLP's workspace (" +
                         std::to_string(plan.workspaceBytes()) +
                         " bytes): " + buffer.message());
  workspace = std::move(*buffer);
  base = workspace.data();
  return Status::ok();
}

/// One shard: its rows of the caller's tensors, the experts among them and
/// its part of the workspace: cuBLASLt's workspace first, then gu = [g u]
/// side by side ([rows, 2I], silu_and_mul's input, over the layout's first
/// two buffers) and h ([rows, I], the third), each 256-byte aligned.
struct GroupedSwiGLUMLP::Segment {
  /// x's rows [first, first + rows), the shard's workspace rows from
  /// `first - Shard::first`.
  size_t expert = 0;
  int64_t first = 0, rows = 0;
};

struct GroupedSwiGLUMLP::Shard {
  int64_t first = 0, rows = 0;
  /// H, the token rows' width (from the step's shape: a backward part's x
  /// or dy is an empty view).
  int64_t hidden = 0;
  /// g and u are gu's two halves (ld 2I): dx = [dg du]·[gate; up] is then
  /// one GEMM over K = 2I where the weights are one gate_up stack.
  MatrixView gu, g, u, h;
  std::vector<Segment> segments;
  /// A workspace matrix's rows of a segment.
  MatrixView of(const MatrixView &m, const Segment &segment) const {
    return slice(m, segment.first - first, segment.rows);
  }
};

GroupedSwiGLUMLP::Shard
GroupedSwiGLUMLP::shard(const MLPShape &shape, DType dtype, int64_t index,
                        const std::vector<int64_t> &offsets) const {
  Shard s;
  s.first = index * plan.rowsPerShard;
  s.rows = std::min(plan.rowsPerShard, shape.rows - s.first);
  s.hidden = shape.hidden;
  int64_t I = shape.intermediate;
  size_t block = plan.layout.bufferBytes(plan.rowsPerShard);
  // The shard's buffers follow the last lane's cuBLASLt workspace; with a
  // scratch apart, gu (the kept buffers) is the workspace and h follows
  // the lanes in the scratch.
  rt::cu::DevicePtr lanesEnd = blasWorkspace(plan.gemmStreams);
  rt::cu::DevicePtr first = scratchBase ? base : lanesEnd;
  // [rows, 2I] fits the first two buffers: each holds rowsPerShard · I.
  s.gu = {first, dtype, s.rows, 2 * I, 2 * I};
  s.g = {first, dtype, s.rows, I, 2 * I};
  s.u = {first + static_cast<rt::cu::DevicePtr>(I) * rt::byteSize(dtype), dtype,
         s.rows, I, 2 * I};
  s.h = {scratchBase ? lanesEnd : first + 2 * block, dtype, s.rows, I, I};
  int64_t end = s.first + s.rows;
  for (size_t e = 0; e + 1 < offsets.size(); ++e) {
    int64_t from = std::max(offsets[e], s.first);
    int64_t to = std::min(offsets[e + 1], end);
    if (from < to)
      s.segments.push_back({e, from, to - from});
  }
  return s;
}

Status GroupedSwiGLUMLP::gemm(const Operand &a, const Operand &b,
                              const MatrixView &d, float beta,
                              const Lane &lane) {
  return blas->matmul(a, b, d, beta, lane.workspace, lane.stream);
}

rt::cu::DevicePtr GroupedSwiGLUMLP::blasWorkspace(int lane) const {
  return (scratchBase ? scratchBase : base) +
         static_cast<rt::cu::DevicePtr>(lane) * rt::Blas::kWorkspaceBytes;
}

Status GroupedSwiGLUMLP::gateUp(const MLPWeights &w, const TensorView &x,
                                const Shard &s, const Segment &seg,
                                const Lane &lane) {
  MatrixView xs = rowsOf(x, seg.first, seg.rows, x.shape.back());
  if (Status st =
          gemm({xs}, {matrix(w.gate), true}, s.of(s.g, seg), 0.0f, lane);
      !st)
    return st;
  return gemm({xs}, {matrix(w.up), true}, s.of(s.u, seg), 0.0f, lane);
}

Status GroupedSwiGLUMLP::acrossExperts(
    const Shard &s, const RunOptions &run,
    const std::function<Status(const Segment &, const Lane &)> &each) {
  // Lane i: its stream and the i-th cuBLASLt workspace, which no other
  // lane touches while they run side by side.
  auto lane = [&](int i) {
    return Lane{lanes->stream(i, run.stream), blasWorkspace(i)};
  };
  // Side by side only where the experts' GEMMs are small. At 8192 rows an
  // expert's GEMM alone is ~6 waves of tiles on an H200 and four at once
  // only contend (8 % slower at E = 8, I = 1536); at 2048 rows and fewer
  // the streams fill what one GEMM leaves idle (6-15 % faster):
  // docs/Performance.md, "the experts' GEMMs side by side".
  constexpr int64_t kSideBySideRows = 4096;
  bool small =
      !s.segments.empty() &&
      s.rows / static_cast<int64_t>(s.segments.size()) <= kSideBySideRows;
  int used = small ? static_cast<int>(
                         std::min<size_t>(plan.gemmStreams, s.segments.size()))
                   : 1;
  if (used <= 1) {
    for (const Segment &seg : s.segments)
      if (Status st = each(seg, lane(0)); !st)
        return st;
    return Status::ok();
  }
  if (Status st = lanes->fork(run.stream); !st)
    return st;
  // A segment's GEMMs stay on one lane, in order; segments take the lanes
  // in turn. The lanes are joined even after an error: a capture into a
  // CUDA graph must end joined.
  Status first = Status::ok();
  for (size_t i = 0; i < s.segments.size() && first; ++i)
    first = each(s.segments[i], lane(static_cast<int>(i % used)));
  Status joined = lanes->join(run.stream);
  return !first ? first : joined;
}

Status GroupedSwiGLUMLP::product(const Shard &s, const Routing &routing,
                                 const RunOptions &run) {
  // h = silu(g) · u over gu, into h's buffer (h is half of gu's width: it
  // cannot be written over gu row by row).
  if (routing.given())
    return ops.scaledSiluAndMulForward(
        tensorOf(s.gu), rowsOfVector(routing.weights, s.first, s.rows),
        tensorOf(s.h), kernelRun(run));
  return ops.siluAndMulForward(tensorOf(s.gu), tensorOf(s.h), kernelRun(run));
}

Status GroupedSwiGLUMLP::hAgain(const Shard &s, const Routing &routing,
                                const RunOptions &run) {
  // A scratch apart is the untiled step's alone (prepare).
  if (!scratchBase)
    return Status::ok();
  return product(s, routing, run);
}

rt::GroupedScratch GroupedSwiGLUMLP::groupedScratch() const {
  return {blasWorkspace(0), kGroupedScratchBytes};
}

Status GroupedSwiGLUMLP::forward(const GroupedMLPWeights &weights,
                                 const TensorView &x,
                                 const ExpertSplits &splits,
                                 const TensorView &y, const RunOptions &run,
                                 const TensorView &routingWeights) {
  rt::StatusOr<MLPShape> checked = checkGroupedOperands(weights, x, y, "y");
  if (!checked)
    return checked.takeStatus();
  MLPShape shape = *checked;
  if (Status s = checkRouting(routingWeights, nullptr, shape.rows); !s)
    return s;
  Routing routing{routingWeights, {}};
  // Before the workspace is touched: bad splits are refused with a pending
  // untiled forward's record intact.
  rt::StatusOr<ExpertGemms> experts =
      ExpertGemms::resolve(ops.device(), weights, nullptr, splits, shape,
                           x.dtype, {&x, &y}, kGroupedScratchBytes, run.stream);
  if (!experts)
    return experts.takeStatus();
  if (shape.rows == 0)
    return Status::ok();
  if (Status s = prepare(shape, x.dtype, weights.experts.size(), run); !s)
    return s;
  experts->placeScratch(groupedScratch());
  rt::ContextScope scope(ops.device());
  if (!scope.status())
    return scope.status();
  int64_t H = shape.hidden, I = shape.intermediate;
  // The untiled step keeps gu and h for its backward.
  bool keep = !options.recompute;
  for (int64_t index = 0; index < plan.shards; ++index) {
    Shard s = shard(shape, x.dtype, index, experts->offsets());
    const MatrixView &hs = s.h;
    if (experts->grouped()) {
      rt::RowWindow window{s.first, s.first + s.rows};
      if (Status st =
              experts->gateUp({x.data, H}, {s.gu.data, 2 * I, s.first}, window);
          !st)
        return st;
      if (Status st = product(s, routing, run); !st)
        return st;
      if (Status st = experts->down({hs.data, I, s.first}, {y.data, H}, window);
          !st)
        return st;
      continue;
    }
    if (Status st = acrossExperts(s, run,
                                  [&](const Segment &seg, const Lane &lane) {
                                    return gateUp(weights.experts[seg.expert],
                                                  x, s, seg, lane);
                                  });
        !st)
      return st;
    if (Status st = product(s, routing, run); !st)
      return st;
    if (Status st = acrossExperts(
            s, run,
            [&](const Segment &seg, const Lane &lane) {
              return gemm({s.of(hs, seg)},
                          {matrix(weights.experts[seg.expert].down), true},
                          rowsOf(y, seg.first, seg.rows, H), 0.0f, lane);
            });
        !st)
      return st;
  }
  if (keep)
    remember(shape.rows, routing.given());
  return Status::ok();
}

Status GroupedSwiGLUMLP::backwardShard(
    const GroupedMLPWeights &weights, const ExpertGemms &experts,
    const Shard &s, const TensorView &x, const TensorView &dy,
    const TensorView &dx, const GroupedMLPGradients &grads, bool overwrite,
    std::vector<bool> &written, const Routing &routing, const RunOptions &run,
    Part part) {
  if (experts.grouped())
    return backwardShardGrouped(experts, s, x, dy, dx, overwrite, routing, run,
                                part);
  int64_t H = s.hidden;
  // beta = 0 on an expert's first segment of an overwriting call: its
  // main_grad is replaced, never read (a NaN in it is harmless). An expert
  // has one segment per shard.
  std::vector<float> betas(weights.experts.size(), 1.0f);
  for (const Segment &seg : s.segments) {
    betas[seg.expert] = overwrite && !written[seg.expert] ? 0.0f : 1.0f;
    written[seg.expert] = true;
  }
  if (part != Part::GateUp) {
    if (Status st = hAgain(s, routing, run); !st)
      return st;
    if (Status st = acrossExperts(
            s, run,
            [&](const Segment &seg, const Lane &lane) -> Status {
              const MLPWeights &w = weights.experts[seg.expert];
              MatrixView dys = rowsOf(dy, seg.first, seg.rows, H);
              MatrixView hs = s.of(s.h, seg);
              if (options.recompute) {
                // The gate/up projections again (not the down projection,
                // whose output the backward never needs), and dh = dy ·
                // down into h's buffer.
                if (Status st = gateUp(w, x, s, seg, lane); !st)
                  return st;
              } else {
                // The untiled step kept h: main_grad(down) += dyᵀ · h
                // before dh takes h's place.
                if (Status st = gemm({dys, true}, {hs},
                                     matrix(grads.experts[seg.expert].down),
                                     betas[seg.expert], lane);
                    !st)
                  return st;
              }
              return gemm({dys}, {matrix(w.down)}, hs, 0.0f, lane);
            });
        !st)
      return st;
    if (Status st = swigluBackward(s, routing, run); !st)
      return st;
  }
  if (part == Part::Down)
    return Status::ok();
  return acrossExperts(
      s, run, [&](const Segment &seg, const Lane &lane) -> Status {
        const MLPWeights &w = weights.experts[seg.expert];
        const MLPGradients &mg = grads.experts[seg.expert];
        float beta = betas[seg.expert];
        MatrixView xs = rowsOf(x, seg.first, seg.rows, H);
        MatrixView dxs = rowsOf(dx, seg.first, seg.rows, H);
        MatrixView dg = s.of(s.g, seg), du = s.of(s.u, seg);
        // main_grad(down) [H, I] += dyᵀ · h (the untiled step did it before
        // h became dh).
        if (options.recompute)
          if (Status st = gemm({rowsOf(dy, seg.first, seg.rows, H), true},
                               {s.of(s.h, seg)}, matrix(mg.down), beta, lane);
              !st)
            return st;
        // main_grad(gate) [I, H] += dgᵀ · x, main_grad(up) += duᵀ · x, then
        // dx = dg · gate + du · up (dx may be x's buffer: its rows are read
        // first).
        if (Status st = gemm({dg, true}, {xs}, matrix(mg.gate), beta, lane);
            !st)
          return st;
        if (Status st = gemm({du, true}, {xs}, matrix(mg.up), beta, lane); !st)
          return st;
        if (Status st = gemm({dg}, {matrix(w.gate)}, dxs, 0.0f, lane); !st)
          return st;
        return gemm({du}, {matrix(w.up)}, dxs, 1.0f, lane);
      });
}

Status GroupedSwiGLUMLP::swigluBackward(const Shard &s, const Routing &routing,
                                        const RunOptions &run) {
  TensorView gu = tensorOf(s.gu), h = tensorOf(s.h);
  if (routing.given()) {
    // The same passes with the rows' weights, and their gradient (a row
    // sum of the derived backward) into the shard's rows of dRouting.
    TensorView w = rowsOfVector(routing.weights, s.first, s.rows);
    TensorView dw = rowsOfVector(routing.grad, s.first, s.rows);
    if (options.recompute)
      return ops.scaledSiluAndMulBackwardWithForward(gu, w, h, gu, dw, h,
                                                     kernelRun(run));
    return ops.scaledSiluAndMulBackward(gu, w, h, gu, dw, kernelRun(run));
  }
  if (options.recompute)
    // One pass over gu and dh (the derived backward with return-primal)
    // leaves [dg du] over gu and h = silu(g) · u over dh: h costs no pass
    // of its own.
    return ops.siluAndMulBackwardWithForward(gu, h, gu, h, kernelRun(run));
  return ops.siluAndMulBackward(gu, h, gu, kernelRun(run));
}

Status GroupedSwiGLUMLP::backwardShardGrouped(
    const ExpertGemms &experts, const Shard &s, const TensorView &x,
    const TensorView &dy, const TensorView &dx, bool overwrite,
    const Routing &routing, const RunOptions &run, Part part) {
  // The per-segment step's phases, each one launch over every expert (the
  // grouped GEMM sets beta per expert: 0 on its first rows of an overwrite).
  int64_t I = s.g.cols, H = s.hidden;
  rt::RowWindow window{s.first, s.first + s.rows};
  RowsOf xs{x.data, H}, dys{dy.data, H}, dxs{dx.data, H};
  RowsOf gu{s.gu.data, 2 * I, s.first}, h{s.h.data, I, s.first};
  if (part != Part::GateUp) {
    if (Status st = hAgain(s, routing, run); !st)
      return st;
    if (options.recompute) {
      if (Status st = experts.gateUp(xs, gu, window); !st)
        return st;
    } else if (Status st = experts.weightsDown(dys, h, window, overwrite);
               !st) {
      return st;
    }
    if (Status st = experts.backDown(dys, h, window); !st)
      return st;
    if (Status st = swigluBackward(s, routing, run); !st)
      return st;
    if (options.recompute)
      if (Status st = experts.weightsDown(dys, h, window, overwrite); !st)
        return st;
  }
  if (part == Part::Down)
    return Status::ok();
  // The gate/up gradients read x before dx is written (dx may be x's
  // buffer).
  if (Status st = experts.weightsGateUp(gu, xs, window, overwrite); !st)
    return st;
  return experts.backGateUp(gu, dxs, window);
}

Status GroupedSwiGLUMLP::checkKept(int64_t rows, const Routing &routing,
                                   Part part) {
  auto it = keptIn(base);
  if (it == kept.end() || it->rows != rows)
    return Status::error("the untiled backward (recompute = false) needs "
                         "the forward of the same x, with the same "
                         "workspace, first: it keeps g, u and h");
  if (part != Part::GateUp && it->routed != routing.given())
    return Status::error(
        std::string("the untiled backward (recompute = false) takes "
                    "routing weights exactly where its forward did: "
                    "the kept h is ") +
        (it->routed ? "scaled by them" : "not scaled"));
  if (it->scratchApart != (scratchBase != 0))
    return Status::error(std::string("the untiled backward takes a scratch "
                                     "apart from its workspace exactly where "
                                     "its forward did (it ") +
                         (it->scratchApart ? "did" : "did not") + ")");
  if (part == Part::GateUp && !it->downDone)
    return Status::error("the gate/up part of the untiled backward needs its "
                         "down part first, on the same forward");
  if (part != Part::GateUp && it->downDone)
    return Status::error("the down part of this forward's backward already "
                         "ran: g, u and h hold its gradients now; the "
                         "gate/up part comes next");
  if (part == Part::Down)
    it->downDone = true;
  return Status::ok();
}

Status GroupedSwiGLUMLP::backward(
    const GroupedMLPWeights &weights, const TensorView &x,
    const ExpertSplits &splits, const TensorView &dy, const TensorView &dx,
    const GroupedMLPGradients &mainGrad, bool overwrite, const RunOptions &run,
    const TensorView &routingWeights, const TensorView &dRouting, Part part) {
  if (part != Part::Whole && options.recompute)
    return Status::error("the backward in two parts is the untiled step's "
                         "(recompute = false): the tiled step reads x and "
                         "dy together, shard by shard");
  // What the part reads and writes: Down dy (for dh and [dg du]), GateUp x
  // and dx, Whole all three.
  rt::StatusOr<MLPShape> checked =
      part == Part::Down     ? checkGroupedOperands(weights, dy, dy, "dy")
      : part == Part::GateUp ? checkGroupedOperands(weights, x, dx, "dx")
                             : checkGroupedOperands(weights, x, dy, "dy");
  if (!checked)
    return checked.takeStatus();
  MLPShape shape = *checked;
  if (part == Part::Whole)
    if (Status s = rt::checkTensor(dx, "dx", x.dtype, x.shape); !s)
      return s;
  DType dtype = (part == Part::Down ? dy : x).dtype;
  if (Status s =
          checkGroupedGradients(mainGrad, weights.experts.size(), shape, dtype);
      !s)
    return s;
  // Gradients in the weights' dtype are written once, never added to.
  bool ownDtype = mainGrad.experts[0].gate.dtype != DType::F32;
  if (ownDtype && (!overwrite || options.recompute))
    return Status::error(
        std::string("main_grad in ") + name(dtype) +
        " is written only by an overwrite call of the untiled step "
        "(recompute = false): a sum over shards or micro-batches needs "
        "f32 main_grad");
  // The routing weights act in the down part (GateUp reads only [dg du]).
  Routing routing;
  if (part != Part::GateUp) {
    if (Status s = checkRouting(routingWeights, &dRouting, shape.rows); !s)
      return s;
    routing = {routingWeights, dRouting};
  }
  rt::StatusOr<ExpertGemms> experts = ExpertGemms::resolve(
      ops.device(), weights, &mainGrad, splits, shape, dtype, {&x, &dy, &dx},
      kGroupedScratchBytes, run.stream);
  if (!experts)
    return experts.takeStatus();
  if (shape.rows > 0) {
    if (Status s = prepare(shape, dtype, weights.experts.size(), run); !s)
      return s;
    experts->placeScratch(groupedScratch());
    if (!options.recompute)
      if (Status s = checkKept(shape.rows, routing, part); !s)
        return s;
  }
  rt::ContextScope scope(ops.device());
  if (!scope.status())
    return scope.status();
  std::vector<bool> written(weights.experts.size(), false);
  for (int64_t index = 0; shape.rows > 0 && index < plan.shards; ++index)
    if (Status s = backwardShard(
            weights, *experts, shard(shape, dtype, index, experts->offsets()),
            x, dy, dx, mainGrad, overwrite, written, routing, run, part);
        !s)
      return s;
  // The untiled step's g, u and h are spent (now dg, du and dh).
  if (!options.recompute && shape.rows > 0 && part != Part::Down)
    forget(base);
  // The grouped GEMM zeroed (on an overwrite) the experts without tokens.
  if (!overwrite || experts->grouped())
    return Status::ok();
  // An expert without tokens has zero gradients (those of this part).
  for (size_t e = 0; e < written.size(); ++e) {
    if (written[e])
      continue;
    const MLPGradients &mg = mainGrad.experts[e];
    std::vector<const TensorView *> zeroed;
    if (part != Part::GateUp)
      zeroed.push_back(&mg.down);
    if (part != Part::Down)
      zeroed.insert(zeroed.end(), {&mg.gate, &mg.up});
    for (const TensorView *g : zeroed)
      if (Status s = rt::check(ops.device().driver().memsetD8Async(
                                   g->data, 0,
                                   g->numElements() * rt::byteSize(g->dtype),
                                   run.stream),
                               "cuMemsetD8Async (main_grad)");
          !s)
        return s;
  }
  return Status::ok();
}

} // namespace tile::ops
