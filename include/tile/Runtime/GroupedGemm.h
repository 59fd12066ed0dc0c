//===- GroupedGemm.h - every expert's GEMM in one launch --------*- C++ -*-===//
//
// The GEMMs of a mixture-of-experts layer. Token rows arrive grouped by
// expert: the first counts[0] rows belong to expert 0, the next counts[1]
// to expert 1, … (a count may be 0). One call runs one projection (or two
// side by side) for every expert in one launch of CUTLASS's SM90 grouped
// GEMM (lib/Runtime/GroupedGemm/). The counts may live on the device (a
// router's output, never copied to the host) or on the host: a one-CTA
// kernel turns them into the groups' shapes and addresses on the device
// before the GEMM runs, so nothing waits for the GPU and a step can be
// captured in a CUDA graph. Counts that do not sum to the rows given stop
// that kernel with a message (a device-side assert, as PyTorch's): a bad
// split never yields a silently wrong result.
//
// Three forms, named by what they compute over expert e's token rows t:
//
//   project:  D[t] = A[t] · B_eᵀ             the forward (x·Wᵀ); B [E][N, K]
//   back:     D[t] = A[t] · B_e (+ D[t])     the data gradient (dy·W)
//   weights:  D_e (+)= Σ_t A[t]ᵀ ⊗ B[t]      the weight gradient
//
// A and B (bf16) and the bf16 D of project/back are row-major; weights'
// D is fp32 (main_grad): added to (beta = 1), or on an `overwrite` call
// replaced without being read (beta = 0 on the expert's first rows; an
// expert with no rows at all is zeroed). An overwrite of every token row
// may take a bf16 D instead (the untiled step's own gradients: rounded
// once from the fp32 accumulator, as a cast of fp32 D would be). A call may
// cover a window of the token rows (one shard of a sequence-tiled step): each
// expert then contributes the rows it has in the window.
//
// Runs on compute capability 9.0 (the kernels are built for sm_90a);
// `available` says so, and the callers keep their per-expert reference path
// for other GPUs.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_RUNTIME_GROUPEDGEMM_H
#define TILE_RUNTIME_GROUPEDGEMM_H

#include "tile/Runtime/Runtime.h"

#include <cstdint>

namespace tile::rt {

/// How many rows each expert's tokens take: on the device (int32 or int64,
/// `experts` of them) or on the host.
struct ExpertCounts {
  cu::DevicePtr device = 0;
  DType deviceType = DType::I64;
  const int64_t *host = nullptr;
  int64_t experts = 0;
  /// The counts' sum: the rows of every token-row operand.
  int64_t rows = 0;
};

/// Token rows [begin, end) of one call (a shard of a tiled step).
struct RowWindow {
  int64_t begin = 0, end = 0;
};

/// A row-major matrix of token rows, `ld` elements apart; its first row
/// is token row `firstRow` (a shard's buffer starts at its window).
struct TokenRows {
  cu::DevicePtr data = 0;
  int64_t ld = 0;
  int64_t firstRow = 0;
};

/// Row-major per-expert matrices, expert e's at `data + e * expertStride`
/// elements.
struct ExpertMatrices {
  cu::DevicePtr data = 0;
  int64_t ld = 0;
  int64_t expertStride = 0;
};

/// One projection of `project` (D [*, n] = A [*, k] · B_eᵀ, B_e [n, k]) or
/// of `back` (D [*, n] (+)= A [*, k] · B_e, B_e [k, n]).
struct RowOperands {
  TokenRows a;
  ExpertMatrices b;
  TokenRows d;
};
/// One projection of `weights`: D_e [m, n] (+)= A_eᵀ · B_e, A [*, m],
/// B [*, n] token rows, D fp32 (or bf16: see `weights`).
struct WeightOperands {
  TokenRows a;
  TokenRows b;
  ExpertMatrices d;
};

/// Where a call's tables (the groups' shapes, addresses and strides, and
/// CUTLASS's workspace) go: `bytes` of device memory nothing else uses
/// until the call's kernels have run (stream order).
struct GroupedScratch {
  cu::DevicePtr data = 0;
  size_t bytes = 0;
};

class GroupedGemm {
public:
  /// The most experts one call takes (the counts are scanned by one CTA;
  /// Launch.h's grouped::kMaxExperts is the same).
  static constexpr int64_t kMaxExperts = 1024;
  /// Whether the stacked matrices suit the grouped GEMM (16-byte aligned
  /// base, rows and experts, for TMA): callers fall back where not.
  static bool aligned(const ExpertMatrices &m, size_t elementBytes);

  /// Whether `device` runs the grouped GEMM (compute capability 9.0).
  static bool available(const Device &device);
  /// Scratch bytes one call over `experts` × `projections` groups needs.
  static size_t scratchBytes(const Device &device, int64_t experts,
                             int projections = 2);

  /// D[t] = A[t] · B_eᵀ for one or two projections (`count`), each
  /// [rows, n] from [rows, k].
  static Status project(const Device &device, const ExpertCounts &counts,
                        RowWindow window, const RowOperands *projections,
                        int count, int64_t n, int64_t k,
                        const GroupedScratch &scratch, cu::Stream stream);
  /// D[t] = A[t] · B_e + beta · D[t] (beta 0: D not read).
  static Status back(const Device &device, const ExpertCounts &counts,
                     RowWindow window, const RowOperands *projections,
                     int count, int64_t n, int64_t k, float beta,
                     const GroupedScratch &scratch, cu::Stream stream);
  /// D_e [m, n] += A_eᵀ · B_e, or (`overwrite`) replaced; an expert with
  /// no rows is left alone, or zeroed by an overwrite call whose window
  /// starts at row 0. `gradType` is D's: F32, or BF16 for an overwrite
  /// whose window is every token row (nothing to add to).
  static Status weights(const Device &device, const ExpertCounts &counts,
                        RowWindow window, const WeightOperands *projections,
                        int count, int64_t m, int64_t n, bool overwrite,
                        DType gradType, const GroupedScratch &scratch,
                        cu::Stream stream);
};

} // namespace tile::rt

#endif // TILE_RUNTIME_GROUPEDGEMM_H
