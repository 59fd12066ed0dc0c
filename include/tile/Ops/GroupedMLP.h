//===- GroupedMLP.h - a grouped (mixture-of-experts) SwiGLU MLP -*- C++ -*-===//
//
// E experts, each a SwiGLU MLP (TiledMLP.h) with its own gate and up [I, H]
// and down [H, I]. The tokens x [T, H] arrive grouped by expert: the first
// splits[0] rows go to expert 0, the next splits[1] to expert 1, … (the
// `m_splits` of TransformerEngine's GroupedLinear; a split may be 0).
//
//   y[rows of e] = (silu(x_e·gate_eᵀ) ⊙ (x_e·up_eᵀ)) · down_eᵀ
//
// One step runs over shards of the token rows, as the dense tiled MLP does:
// each shard's rows meet one or more experts, and per (shard, expert)
// segment the GEMMs run through cuBLASLt with no host synchronization. The
// segments' GEMMs of one phase spread over MLPOptions::streams streams
// forked from the step's stream and joined back to it (rt::StreamFork),
// where the experts are small enough for one GEMM to leave the GPU idle.
// CUDA 13.1's cublasLt.h has no grouped GEMM; cuBLAS's
// cublasGemmGroupedBatchedEx would add libcublas to what Tile loads
// (docs/GroupedMLP.md). SwiGLU
// and its derived backward run once per shard over all of the shard's rows,
// whatever their experts: they are elementwise. Nothing of size [T, I] is kept
// between the forward and the backward unless MLPOptions::recompute is false.
//
// The weight gradients go in fp32 straight into per-expert main_grad
// buffers (one [E, …] allocation or one per expert) by GEMMs with beta = 1,
// or beta = 0 on an expert's first segment of an `overwrite` call; an
// expert without tokens has zero gradient: nothing is added to its
// main_grad, or it is zeroed by an `overwrite` call. An overwrite of one
// shard (the untiled step, recompute = false) may take them in the
// weights' dtype instead (the autograd step's own .grad: half the bytes of
// fp32, and no cast after), rounded once from the fp32 accumulator.
//
// On an H100/H200 (compute capability 9.0) with bf16 and H, I multiples of
// 8, each phase's GEMMs for every expert are one launch of the grouped GEMM
// (rt::GroupedGemm, CUTLASS): 7 launches a step untiled, whatever E. The
// splits may then live on the device (a router's counts, ExpertSplits::
// onDevice): they are read by the GPU only, so a step never waits for it
// and can be captured in a CUDA graph. Elsewhere the GEMMs are per expert
// segment through cuBLASLt (the reference path), with host splits; device
// splits are then copied to the host first, which waits for the stream.
//
// The dense TiledSwiGLUMLP is this operator with one expert.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_OPS_GROUPEDMLP_H
#define TILE_OPS_GROUPEDMLP_H

#include "tile/Ops/TiledMLP.h"
#include "tile/Runtime/GroupedGemm.h"
#include "tile/Runtime/StreamFork.h"

#include <functional>
#include <initializer_list>
#include <vector>

namespace tile::ops {

class ExpertGemms; // lib/Ops/ExpertGemms.h

/// Each expert's weights, all of one shape and dtype.
struct GroupedMLPWeights {
  std::vector<MLPWeights> experts;
  /// Views of stacked weights: gate and up [E, I, H], down [E, H, I].
  static rt::StatusOr<GroupedMLPWeights>
  stacked(const TensorView &gate, const TensorView &up, const TensorView &down);
  /// Views of fused stacked weights (Hugging Face's MoE experts):
  /// gate_up [E, 2I, H] (gate the first I rows of each expert), down
  /// [E, H, I].
  static rt::StatusOr<GroupedMLPWeights> fusedStacked(const TensorView &gateUp,
                                                      const TensorView &down);
};

/// Each expert's fp32 main_grad buffers, shaped like its weights.
struct GroupedMLPGradients {
  std::vector<MLPGradients> experts;
  static rt::StatusOr<GroupedMLPGradients>
  stacked(const TensorView &gate, const TensorView &up, const TensorView &down);
  static rt::StatusOr<GroupedMLPGradients>
  fusedStacked(const TensorView &gateUp, const TensorView &down);
};

/// Each expert's token count: host integers, or an [E] int32/int64 tensor
/// on the device that the step reads on the GPU.
struct ExpertSplits {
  std::vector<int64_t> host;
  TensorView device; // data 0: the splits are `host`
  ExpertSplits(std::vector<int64_t> host) : host(std::move(host)) {}
  ExpertSplits(std::initializer_list<int64_t> host) : host(host) {}
  static ExpertSplits onDevice(const TensorView &counts) {
    ExpertSplits splits({});
    splits.device = counts;
    return splits;
  }
  bool onDevice() const { return device.data != 0; }
};

class GroupedSwiGLUMLP {
public:
  static rt::StatusOr<std::unique_ptr<GroupedSwiGLUMLP>>
  create(Operators &ops, MLPOptions options = {});
  ~GroupedSwiGLUMLP();

  /// y [T, H] (any leading shape flattened into T rows) from x grouped by
  /// `splits` (one per expert, ≥ 0, summing to T). With `routing` (a
  /// contiguous [T] f32 device tensor: a mixture of experts' routing weight
  /// of each row) each row's h is scaled by its weight before the down
  /// projection, y[t] = routing[t] · mlp(x[t]): the weighted sum over a
  /// token's experts is then a plain sum, and the weights' gradient needs
  /// nothing of width H kept (scaled_silu_and_mul). y may be x's buffer:
  /// the step reads all of a shard's x before it writes the shard's y.
  Status forward(const GroupedMLPWeights &weights, const TensorView &x,
                 const ExpertSplits &splits, const TensorView &y,
                 const RunOptions &run = {}, const TensorView &routing = {});
  /// dx from dy, and every expert's main_grad (+)= its weight gradients
  /// (`overwrite`: replaced; else added). The untiled step (recompute =
  /// false) needs the forward of the same rows, with the same workspace,
  /// first (the last kMaxKeptSteps forwards are known, each by its
  /// workspace: a caller may run several forwards before their backwards).
  /// x must hold the forward's values, not be the same buffer: a caller may
  /// gather it again rather than keep it (tile.ops.moe_experts does). dx
  /// may be dy's buffer: a shard's dy is read before its dx is written.
  /// With the forward's `routing`, `dRouting` ([T] f32) is overwritten
  /// with each row's ⟨dy[t], mlp(x[t])⟩, the routing weight's gradient.
  ///
  /// The untiled step's backward may come in two calls (`part`), for a
  /// caller that makes x's rows only once dy is spent: tile.ops.moe_experts
  /// gathers them into dy's buffer, so the step never holds both. `Down`
  /// reads dy (x and dx unused: empty views): down's gradient, dh and
  /// [dg du] (kept for the second call), dRouting. `GateUp` reads x and
  /// writes dx, which may be x's buffer (each row's x is read by the gate
  /// and up gradients before its dx is written): their gradients and dx.
  enum class Part { Whole, Down, GateUp };
  Status backward(const GroupedMLPWeights &weights, const TensorView &x,
                  const ExpertSplits &splits, const TensorView &dy,
                  const TensorView &dx, const GroupedMLPGradients &mainGrad,
                  bool overwrite, const RunOptions &run = {},
                  const TensorView &routing = {},
                  const TensorView &dRouting = {}, Part part = Part::Whole);

  /// The plan of the last step.
  const ShardPlan &lastPlan() const { return plan; }
  /// Bytes of the workspace held now (none where callers give theirs).
  size_t workspaceBytes() const { return workspace.size(); }
  void releaseWorkspace();

  /// Untiled forwards whose g, u and h a backward may still use: more than
  /// the MoE layers of any model (94 in Qwen3-235B) sharing one operator,
  /// every forward run before the first backward. (A forward whose backward
  /// never comes stays until its workspace holds another forward, or until
  /// this many newer ones push it out.)
  static constexpr size_t kMaxKeptSteps = 4096;

private:
  GroupedSwiGLUMLP(Operators &ops, std::unique_ptr<rt::Blas> blas,
                   std::unique_ptr<rt::StreamFork> lanes, MLPOptions options);
  /// Plans the step and makes sure a workspace holds it: the caller's
  /// (checked) or the one this object keeps. Sets `base`.
  Status prepare(const MLPShape &shape, rt::DType dtype, size_t experts,
                 const RunOptions &run);
  struct Segment; // the rows of one expert in a shard
  struct Shard;   // one shard's rows, its experts' segments, its workspace
  /// The routing weights of a step and their gradient (data 0: none).
  struct Routing {
    TensorView weights, grad;
    bool given() const { return weights.data != 0; }
  };
  Shard shard(const MLPShape &shape, rt::DType dtype, int64_t index,
              const std::vector<int64_t> &offsets) const;
  /// h = silu(g) · u (· the rows' routing weights, where given) of one
  /// shard, from gu into h.
  Status product(const Shard &s, const Routing &routing, const RunOptions &run);
  /// The untiled backward's h again (product), where its forward's was in
  /// a scratch apart and is gone: before anything reads h.
  Status hAgain(const Shard &s, const Routing &routing, const RunOptions &run);
  /// Where a GEMM runs: a stream, and the cuBLASLt workspace only that
  /// stream uses while the lanes run side by side.
  struct Lane {
    rt::cu::Stream stream;
    rt::cu::DevicePtr workspace;
  };
  Status gemm(const rt::Operand &a, const rt::Operand &b,
              const rt::MatrixView &d, float beta, const Lane &lane);
  /// Lane `lane`'s cuBLASLt workspace: the workspace starts with one per
  /// GEMM stream (blasWorkspace(plan.gemmStreams) is where g, u, h begin).
  rt::cu::DevicePtr blasWorkspace(int lane) const;
  /// g = x·gateᵀ and u = x·upᵀ over one segment, into the shard's buffers:
  /// the forward's projections, and the tiled backward's recompute.
  Status gateUp(const MLPWeights &w, const TensorView &x, const Shard &s,
                const Segment &seg, const Lane &lane);
  /// Calls `each` for every expert segment of `s`, the segments spread over
  /// the plan's GEMM streams (forked from run.stream and joined back): one
  /// segment's GEMMs stay on one stream, in order. Segments touch disjoint
  /// rows and experts, so nothing orders them against each other.
  Status acrossExperts(
      const Shard &s, const RunOptions &run,
      const std::function<Status(const Segment &, const Lane &)> &each);
  /// The backward's GEMMs and kernels (of `part`) for one shard;
  /// `written` says which experts' main_grad already holds this call's
  /// gradients.
  Status backwardShard(const GroupedMLPWeights &weights,
                       const ExpertGemms &experts, const Shard &s,
                       const TensorView &x, const TensorView &dy,
                       const TensorView &dx, const GroupedMLPGradients &grads,
                       bool overwrite, std::vector<bool> &written,
                       const Routing &routing, const RunOptions &run,
                       Part part);
  /// The same, each phase one grouped GEMM over every expert.
  Status backwardShardGrouped(const ExpertGemms &experts, const Shard &s,
                              const TensorView &x, const TensorView &dy,
                              const TensorView &dx, bool overwrite,
                              const Routing &routing, const RunOptions &run,
                              Part part);
  /// Checks an untiled backward (`part` of it) against the forward kept in
  /// the workspace at `base`, and notes a `Down` part done.
  Status checkKept(int64_t rows, const Routing &routing, Part part);
  /// [dg du] (over gu) from the shard's dh (in h), and h again (over dh)
  /// where the tiled step recomputes; the routing weights' gradient of the
  /// shard's rows where they are given.
  Status swigluBackward(const Shard &s, const Routing &routing,
                        const RunOptions &run);
  /// Where the grouped GEMM's tables go: lane 0's cuBLASLt workspace,
  /// which a grouped step does not use otherwise.
  rt::GroupedScratch groupedScratch() const;
  static constexpr size_t kGroupedScratchBytes = rt::Blas::kWorkspaceBytes;
  /// Records that the workspace at `base` holds the untiled forward of
  /// `rows` rows (`routed`: its h scaled by routing weights); forget()
  /// drops a workspace's record, keptIn() finds it (kept.end(): none).
  void remember(int64_t rows, bool routed);
  void forget(rt::cu::DevicePtr workspaceBase);
  /// An untiled step's forward: the workspace whose g, u, h hold the
  /// forward of `rows` rows.
  struct Kept {
    rt::cu::DevicePtr workspace;
    int64_t rows;
    /// Whether its h is scaled by routing weights: the backward must take
    /// them too (and not otherwise), or its gradients are off by them.
    bool routed;
    /// Whether h (and the lanes) were in a scratch apart: not kept, made
    /// again from gu by the backward, whose scratch must be apart too.
    bool scratchApart = false;
    /// Whether a `Down` part ran: g, u hold [dg du], h holds dh.
    bool downDone = false;
  };
  std::vector<Kept>::iterator keptIn(rt::cu::DevicePtr workspaceBase);

  Operators &ops;
  std::unique_ptr<rt::Blas> blas;
  std::unique_ptr<rt::StreamFork> lanes;
  MLPOptions options;
  ShardPlan plan;
  rt::DeviceBuffer workspace;
  /// The workspace of the step under way: cuBLASLt's (one per GEMM
  /// stream), then g, u and h; or, with a caller's scratch apart
  /// (RunOptions::scratch, the untiled step), g and u alone, the lanes and
  /// h at scratchBase.
  rt::cu::DevicePtr base = 0, scratchBase = 0;
  /// The untiled step's forwards, oldest first.
  std::vector<Kept> kept;
};

} // namespace tile::ops

#endif // TILE_OPS_GROUPEDMLP_H
