//===- ExpertGemms.h - how a grouped MLP step's GEMMs meet the experts ----===//
//
// A step of GroupedSwiGLUMLP runs its GEMMs one of two ways, decided once
// per step here:
//
// - grouped: each phase is one launch of rt::GroupedGemm over every
//   expert (CUTLASS on compute capability 9.0; bf16; H and I multiples of
//   8; the experts' weights, and main_grad, evenly stacked). The splits
//   stay where they are, on the device or the host.
// - per segment: the reference path, cuBLASLt per (shard, expert) segment
//   (GroupedMLP.cpp), which needs the splits on the host: device splits
//   are copied there, waiting for the stream.
//
// The grouped phases take the shard's window of token rows; the shard's
// buffers (gu = [g u] side by side, and h) start at the window's first row.
// Where the gate and up weights are one gate_up stack (Hugging Face's
// layout: up's rows follow gate's), the gate/up phases are one projection
// of 2I columns: x is read once for both, and dx = [dg du]·gate_up is one
// GEMM over K = 2I (no second pass adding du·up to dx in bf16).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_OPS_EXPERTGEMMS_H
#define TILE_LIB_OPS_EXPERTGEMMS_H

#include "tile/Ops/GroupedMLP.h"
#include "tile/Runtime/GroupedGemm.h"

#include <initializer_list>
#include <optional>

namespace tile::ops {

/// A token-row matrix of a step: a caller's tensor (first row 0) or a
/// shard's buffer (first row: the shard's).
struct RowsOf {
  rt::cu::DevicePtr data;
  int64_t ld;
  int64_t firstRow = 0;
  operator rt::TokenRows() const { return {data, ld, firstRow}; }
};

class ExpertGemms {
public:
  /// Decides how the step's GEMMs run and checks the splits (on the host;
  /// device splits' values are checked by the GPU). `grads` is null for a
  /// forward; `tokens` are the step's token-row tensors (their addresses
  /// must suit the grouped GEMM). The grouped tables need at most
  /// `scratchBytes`; where they go is placed once the step's workspace is
  /// (placeScratch), before the first phase.
  static rt::StatusOr<ExpertGemms>
  resolve(const rt::Device &device, const GroupedMLPWeights &weights,
          const GroupedMLPGradients *grads, const ExpertSplits &splits,
          const MLPShape &shape, rt::DType dtype,
          std::initializer_list<const TensorView *> tokens, size_t scratchBytes,
          rt::cu::Stream stream);
  void placeScratch(rt::GroupedScratch at) { scratch = at; }

  bool grouped() const { return isGrouped; }
  /// Per segment: expert e's rows are [offsets[e], offsets[e + 1]).
  const std::vector<int64_t> &offsets() const { return hostOffsets; }

  // The grouped phases over token rows `window` (all in stream order).
  /// gu = [x·gateᵀ x·upᵀ] (one launch); gu is [rows, 2I].
  Status gateUp(const RowsOf &x, const RowsOf &gu, rt::RowWindow window) const;
  /// y = h·downᵀ.
  Status down(const RowsOf &h, const RowsOf &y, rt::RowWindow window) const;
  /// dh = dy·down.
  Status backDown(const RowsOf &dy, const RowsOf &dh,
                  rt::RowWindow window) const;
  /// dx = dg·gate + du·up from dgu = [dg du]: one launch over K = 2I for a
  /// gate_up stack, else two (the second adds).
  Status backGateUp(const RowsOf &dgu, const RowsOf &dx,
                    rt::RowWindow window) const;
  /// main_grad(down) (+)= dyᵀ·h.
  Status weightsDown(const RowsOf &dy, const RowsOf &h, rt::RowWindow window,
                     bool overwrite) const;
  /// main_grad(gate) (+)= dgᵀ·x and main_grad(up) (+)= duᵀ·x (one launch).
  Status weightsGateUp(const RowsOf &dgu, const RowsOf &x, rt::RowWindow window,
                       bool overwrite) const;

private:
  rt::ExpertCounts counts() const;
  /// gu's columns [offset, offset + I): g (0) or u (I).
  RowsOf half(const RowsOf &gu, int64_t offset) const;

  const rt::Device *device = nullptr;
  bool isGrouped = false;
  std::vector<int64_t> hostOffsets, hostCounts;
  rt::cu::DevicePtr deviceCounts = 0;
  rt::DType deviceType = rt::DType::I64;
  int64_t experts = 0, rows = 0, hidden = 0, intermediate = 0;
  rt::ExpertMatrices gate, up, downW, gradGate, gradUp, gradDown;
  /// The weight gradients' dtype: f32 (main_grad), or bf16 for the
  /// untiled step's own (GroupedSwiGLUMLP::backward says when).
  rt::DType gradType = rt::DType::F32;
  /// gate and up as one [2I, H] matrix per expert, where up's rows follow
  /// gate's in one stack.
  std::optional<rt::ExpertMatrices> gateUpWeights;
  rt::GroupedScratch scratch;
  rt::cu::Stream stream = nullptr;
};

} // namespace tile::ops

#endif // TILE_LIB_OPS_EXPERTGEMMS_H
