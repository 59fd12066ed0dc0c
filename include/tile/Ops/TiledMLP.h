//===- TiledMLP.h - a sequence-tiled SwiGLU MLP -----------------*- C++ -*-===//
//
//   y = (silu(x·gateᵀ) ⊙ (x·upᵀ)) · downᵀ,   x [S, H], gate/up [I, H], down [H,
//   I]
//
// Long sequences run out of memory in this MLP: gate, up and their product
// are [S, I] each. TiledSwiGLUMLP splits the S rows into shards and keeps
// nothing of size [S, I]:
//
//   forward, per shard:   gu = [x·gateᵀ x·upᵀ], h = silu_and_mul(gu),
//                         y = h·downᵀ
//   backward, per shard:  recompute g = x·gateᵀ, u = x·upᵀ and h (not the
//                         down projection: h is all the backward needs of
//                         it), main_grad(down) += dyᵀ·h, dh = dy·down (over
//                         h), [dg du] = silu_and_mul_bwd(gu, dh) (over gu),
//                         dx = dg·gate + du·up,
//                         main_grad(gate) += dgᵀ·x, main_grad(up) += duᵀ·x
//
// The SwiGLU kernels are examples/silu_and_mul.mlir and its derived backward
// (through Operators); the GEMMs go through cuBLASLt with fp32 accumulation.
// Weight gradients are accumulated in fp32 straight into the caller's main_grad
// buffers by GEMMs with beta = 1 (beta = 0 on the first shard of an
// `overwrite` call): no weight-gradient tensor exists on its own. An
// overwrite of one shard (the untiled step) may take them in the weights'
// dtype instead: rounded once from the fp32 accumulator, nothing added.
//
// Memory: one workspace holds g, u and h for one shard (3·I elements per
// row) plus cuBLASLt's workspace. It is allocated on the first step that
// needs it (never per shard), kept for the next steps, and given back by
// releaseWorkspace() — or, where RunOptions carries a caller's workspace (a
// framework's allocator, a CUDA graph), that one is used and nothing is
// allocated: planShards says how many bytes it needs. Every GEMM and kernel
// of a step runs in order on RunOptions' stream.
//
// The step itself is GroupedSwiGLUMLP's (GroupedMLP.h) with one expert.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_OPS_TILEDMLP_H
#define TILE_OPS_TILEDMLP_H

#include "tile/Ops/Ops.h"
#include "tile/Runtime/Blas.h"

namespace tile::ops {

/// gate and up are [I, H], down is [H, I], all in x's dtype.
struct MLPWeights {
  TensorView gate, up, down;
  /// A fused [2I, H] weight: gate is its first I rows, up the other I.
  static rt::StatusOr<MLPWeights> fused(const TensorView &gateUp,
                                        const TensorView &down);
};

/// fp32 main_grad buffers shaped like the weights (fused: [2I, H] and
/// [H, I]), accumulated in place.
struct MLPGradients {
  TensorView gate, up, down;
  static rt::StatusOr<MLPGradients> fused(const TensorView &gateUp,
                                          const TensorView &down);
};

struct MLPOptions {
  /// How many shards the rows are split into; 0 chooses the fewest whose
  /// workspace fits in `memoryBudgetBytes`. More shards than rows are
  /// clamped to one row per shard.
  int64_t shards = 0;
  size_t memoryBudgetBytes = size_t(1) << 30;
  /// false gives the conventional untiled step, the baseline the tiled one
  /// is measured against: one shard, the forward keeps g, u and h for every
  /// row and the backward (of the same x) recomputes nothing.
  bool recompute = true;
  /// How many streams the experts' GEMMs of a grouped step spread over
  /// (GroupedMLP.h): per-expert GEMMs too small to fill the GPU run side by
  /// side. Each stream has its own cuBLASLt workspace. 1 runs everything on
  /// the step's stream; a step never uses more streams than experts, so the
  /// dense MLP (one expert) always uses one.
  int streams = 4;
};

/// How a step's workspace is laid out, as a function of a shard's rows:
/// `fixedBytes` (one cuBLASLt workspace per GEMM stream), then `buffers`
/// buffers ([rows, I] each: gu = [g u] over the first two, h the third) of
/// `rowBytes` a row, each rounded
/// up to `alignment`: cuBLASLt refuses a workspace that is not 256-byte
/// aligned (CUBLAS_STATUS_INVALID_VALUE) and its fast kernels want aligned
/// operands. The one source of the layout: planShards sizes the workspace
/// with it, the MLP places its buffers by it, and tile_mlp_workspace_layout
/// hands it to callers that size a workspace for a row count they do not
/// know yet (torch.compile's fake tensors of the untiled step).
struct WorkspaceLayout {
  size_t fixedBytes = 0;
  int64_t buffers = 3;
  /// The untiled step's forward keeps the first two (g and u: gu) for its
  /// backward; h is recomputed from them where it is not kept.
  int64_t keptBuffers = 2;
  size_t rowBytes = 0;
  size_t alignment = 256;

  /// One buffer of `rows` rows, rounded up.
  size_t bufferBytes(int64_t rows) const {
    size_t bytes = static_cast<size_t>(rows) * rowBytes;
    return (bytes + alignment - 1) / alignment * alignment;
  }
  /// The buffers the untiled step keeps (g, u) for shards of `rows` rows.
  size_t keptBytes(int64_t rows) const {
    return static_cast<size_t>(keptBuffers) * bufferBytes(rows);
  }
  /// The rest: the cuBLASLt workspaces and the other buffers (h), which a
  /// caller's scratch apart may hold (RunOptions::scratch).
  size_t scratchBytes(int64_t rows) const {
    return fixedBytes +
           static_cast<size_t>(buffers - keptBuffers) * bufferBytes(rows);
  }
  /// The whole workspace for shards of `rows` rows.
  size_t bytes(int64_t rows) const {
    return keptBytes(rows) + scratchBytes(rows);
  }
};

/// How one step is split.
struct ShardPlan {
  int64_t shards = 0;
  int64_t rowsPerShard = 0; // the last shard may have fewer
  /// Streams the GEMMs run on, each with one cuBLASLt workspace.
  int gemmStreams = 1;
  WorkspaceLayout layout;
  size_t workspaceBytes() const { return layout.bytes(rowsPerShard); }
};

/// The workspace layout of a step of `experts` experts under `options`
/// (which set the GEMM streams). Without a GPU; fails on bad options or
/// sizes.
rt::StatusOr<WorkspaceLayout> planWorkspace(int64_t intermediate,
                                            rt::DType dtype,
                                            const MLPOptions &options,
                                            int64_t experts = 1);

/// The plan for `rows` rows of an MLP of `experts` experts with
/// intermediate size `intermediate` in `dtype`. The untiled step is one
/// shard of all `rows` (no shard of rows ≥ 1 is needed when there are none).
/// Without a GPU; fails when the budget cannot hold one row.
rt::StatusOr<ShardPlan> planShards(int64_t rows, int64_t intermediate,
                                   rt::DType dtype, const MLPOptions &options,
                                   int64_t experts = 1);

/// The sizes of one MLP step.
struct MLPShape {
  int64_t rows = 0, hidden = 0, intermediate = 0;
};

/// Checks x [..., H], `out` (y, or dy) [..., H] like x, and the weights;
/// returns S (the leading dimensions flattened), H and I.
rt::StatusOr<MLPShape> checkMLPOperands(const MLPWeights &weights,
                                        const TensorView &x,
                                        const TensorView &out,
                                        const char *outName);
/// Checks the weights alone against H and x's dtype; returns I (gate's
/// rows). checkMLPOperands's weight half, for callers that checked x.
rt::StatusOr<int64_t> checkMLPWeights(const MLPWeights &weights, int64_t hidden,
                                      rt::DType dtype);
/// Checks main_grad buffers shaped like the weights: all fp32, or all in
/// the weights' `dtype` (the untiled step's own gradients, which only an
/// overwrite of one shard may write: GroupedSwiGLUMLP::backward checks).
Status checkMLPGradients(const MLPGradients &grads, const MLPShape &shape,
                         rt::DType dtype);

/// Checks the options alone (no GPU).
Status checkMLPOptions(const MLPOptions &options);

class GroupedSwiGLUMLP; // GroupedMLP.h: this MLP is its one-expert case

class TiledSwiGLUMLP {
public:
  static rt::StatusOr<std::unique_ptr<TiledSwiGLUMLP>>
  create(Operators &ops, MLPOptions options = {});
  ~TiledSwiGLUMLP();

  /// y [..., H] from x [..., H].
  Status forward(const MLPWeights &weights, const TensorView &x,
                 const TensorView &y, const RunOptions &run = {});
  /// dx [..., H] from dy, and main_grad (+)= the weight gradients:
  /// `overwrite` replaces their contents (the first micro-batch), otherwise
  /// the gradients are added to them. The untiled step (recompute = false)
  /// needs the forward of the same x, with the same workspace, first.
  Status backward(const MLPWeights &weights, const TensorView &x,
                  const TensorView &dy, const TensorView &dx,
                  const MLPGradients &mainGrad, bool overwrite,
                  const RunOptions &run = {});

  /// The plan of the last step.
  const ShardPlan &lastPlan() const;
  /// Bytes of the workspace held now (none where callers give theirs).
  size_t workspaceBytes() const;
  void releaseWorkspace();

private:
  explicit TiledSwiGLUMLP(std::unique_ptr<GroupedSwiGLUMLP> grouped);
  std::unique_ptr<GroupedSwiGLUMLP> grouped;
};

} // namespace tile::ops

#endif // TILE_OPS_TILEDMLP_H
