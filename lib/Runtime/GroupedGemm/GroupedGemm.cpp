//===- GroupedGemm.cpp - checks, then the form's CUDA launch --------------===//
//
// Everything the host can check before a grouped GEMM is queued: the
// device, the counts' place and type, the window, the operands' addresses,
// alignment and sizes. Only the counts' values are checked on the device
// (Kernels.cuh's setupGroups), since reading them here would wait for the
// GPU.
//
//===----------------------------------------------------------------------===//

#include "tile/Runtime/GroupedGemm.h"

#include "Launch.h"

#include <algorithm>
#include <string>

#ifndef TILE_GROUPED_GEMM_KERNELS
// Built without the kernels (TILE_GROUPED_GEMM=OFF: the fuzzers' sanitized
// build, which nvcc cannot join): available() is false and every caller
// takes its reference path.
namespace tile::rt::grouped {
static Status notBuilt() {
  return Status::error("grouped GEMM: this library was built without it "
                       "(TILE_GROUPED_GEMM=OFF)");
}
Status launchProject(const Launch &) { return notBuilt(); }
Status launchBack(const Launch &) { return notBuilt(); }
Status launchWeights(const Launch &) { return notBuilt(); }
Status launchWeightsBf16(const Launch &) { return notBuilt(); }
size_t scratchProject(int, int) { return 0; }
size_t scratchBack(int, int) { return 0; }
size_t scratchWeights(int, int) { return 0; }
size_t scratchWeightsBf16(int, int) { return 0; }
} // namespace tile::rt::grouped
#endif

namespace tile::rt {

static_assert(GroupedGemm::kMaxExperts == grouped::kMaxExperts,
              "the setup kernel's parameters hold kMaxExperts host counts");

namespace {

using grouped::Launch;
using grouped::Operand;

Status fail(const std::string &message) {
  return Status::error("grouped GEMM: " + message);
}

/// A matrix of `cols` contiguous elements per row, `ld` apart, at `data`:
/// TMA wants 16-byte aligned rows.
Status checkMatrix(const char *what, cu::DevicePtr data, int64_t ld,
                   int64_t cols, size_t elementBytes) {
  if (!data)
    return fail(std::string(what) + " is null");
  if (data % 16)
    return fail(std::string(what) + " is not 16-byte aligned");
  if (ld < cols)
    return fail(std::string(what) + "'s rows are " + std::to_string(ld) +
                " elements apart, fewer than its " + std::to_string(cols) +
                " columns");
  if ((ld * elementBytes) % 16)
    return fail(std::string(what) + "'s rows (" + std::to_string(ld) +
                " elements apart) are not 16-byte aligned");
  return Status::ok();
}

Status checkExperts(const char *what, const ExpertMatrices &m, int64_t rows,
                    int64_t cols, size_t elementBytes) {
  if (Status s = checkMatrix(what, m.data, m.ld, cols, elementBytes); !s)
    return s;
  if (m.expertStride < rows * m.ld || (m.expertStride * elementBytes) % 16)
    return fail(std::string(what) + "'s experts are " +
                std::to_string(m.expertStride) +
                " elements apart: fewer than one expert's, or not 16-byte "
                "aligned");
  return Status::ok();
}

Status checkSizes(std::initializer_list<int64_t> sizes) {
  for (int64_t size : sizes)
    if (size <= 0 || size % 8 || size > (int64_t(1) << 30))
      return fail("the GEMM sizes must be positive multiples of 8 (16-byte "
                  "rows), got " +
                  std::to_string(size));
  return Status::ok();
}

Operand tokenOperand(const TokenRows &t) { return {t.data, t.ld, t.firstRow}; }

/// A token-row operand's data must start at or before the window's first
/// row (a shard's buffer starts at it).
Status checkFirstRow(const char *what, const TokenRows &t, RowWindow window) {
  if (t.firstRow < 0 || t.firstRow > window.begin)
    return fail(std::string(what) + " starts at token row " +
                std::to_string(t.firstRow) + ", after the window's first, " +
                std::to_string(window.begin));
  return Status::ok();
}
Operand expertOperand(const ExpertMatrices &m) {
  return {m.data, m.ld, m.expertStride};
}

/// The checks and fields every form shares; `count` projections.
StatusOr<Launch> common(grouped::Form form, const Device &device,
                        const ExpertCounts &counts, RowWindow window, int count,
                        const GroupedScratch &scratch, cu::Stream stream) {
  if (!GroupedGemm::available(device))
    return fail("needs compute capability 9.0, " + device.name() + " has " +
                std::to_string(device.computeCapability() / 10) + "." +
                std::to_string(device.computeCapability() % 10));
  if (counts.experts < 1 || counts.experts > GroupedGemm::kMaxExperts)
    return fail("takes 1 to " + std::to_string(GroupedGemm::kMaxExperts) +
                " experts, got " + std::to_string(counts.experts));
  if (!counts.device == !counts.host)
    return fail("the counts must be on the device or on the host (one)");
  if (counts.device && counts.deviceType != DType::I32 &&
      counts.deviceType != DType::I64)
    return fail(std::string("device counts must be int32 or int64, not ") +
                name(counts.deviceType));
  if (counts.device % byteSize(counts.deviceType))
    return fail("the device counts are not aligned to their type");
  if (counts.rows < 0 || counts.rows > (int64_t(1) << 31) - 1)
    return fail("takes 0 to 2^31 - 1 token rows, got " +
                std::to_string(counts.rows));
  if (counts.host) {
    int64_t sum = 0;
    for (int64_t e = 0; e < counts.experts; ++e) {
      if (counts.host[e] < 0)
        return fail("expert " + std::to_string(e) + " has " +
                    std::to_string(counts.host[e]) + " rows");
      sum += counts.host[e];
    }
    if (sum != counts.rows)
      return fail("the experts' counts sum to " + std::to_string(sum) +
                  ", not the " + std::to_string(counts.rows) + " token rows");
  }
  if (window.begin < 0 || window.begin > window.end || window.end > counts.rows)
    return fail("the window [" + std::to_string(window.begin) + ", " +
                std::to_string(window.end) + ") is not within the " +
                std::to_string(counts.rows) + " token rows");
  if (count < 1 || count > 2)
    return fail("takes one or two projections, got " + std::to_string(count));
  if (!scratch.data || scratch.data % 128)
    return fail("the scratch is null or not 128-byte aligned");
  Launch l;
  grouped::Groups &g = l.groups;
  g.form = form;
  g.experts = static_cast<int>(counts.experts);
  g.projections = count;
  g.deviceCounts = counts.device;
  g.countBytes = static_cast<int>(byteSize(counts.deviceType));
  g.rows = counts.rows;
  g.windowBegin = window.begin;
  g.windowEnd = window.end;
  l.hostCounts = counts.host;
  l.scratch = scratch.data;
  l.scratchBytes = scratch.bytes;
  l.smCount = device.multiprocessors();
  l.stream = stream;
  return l;
}

} // namespace

bool GroupedGemm::aligned(const ExpertMatrices &m, size_t elementBytes) {
  return m.data % 16 == 0 && (m.ld * elementBytes) % 16 == 0 &&
         (m.expertStride * elementBytes) % 16 == 0;
}

bool GroupedGemm::available(const Device &device) {
#ifdef TILE_GROUPED_GEMM_KERNELS
  return device.computeCapability() == 90;
#else
  (void)device;
  return false;
#endif
}

size_t GroupedGemm::scratchBytes(const Device &device, int64_t experts,
                                 int projections) {
  int groups = static_cast<int>(std::clamp<int64_t>(experts, 1, kMaxExperts)) *
               std::clamp(projections, 1, 2);
  int sms = device.multiprocessors();
  return std::max({grouped::scratchProject(groups, sms),
                   grouped::scratchBack(groups, sms),
                   grouped::scratchWeights(groups, sms),
                   grouped::scratchWeightsBf16(groups, sms)});
}

namespace {

/// Queues `l` by the form's launch inside the device's context.
Status launchIn(const Device &device, const Launch &l,
                Status (*launch)(const Launch &)) {
  ContextScope scope(device);
  if (!scope.status())
    return scope.status();
  return launch(l);
}

/// project and back: A [*, k] token rows against each expert's B (project
/// [n, k], back [k, n]), into D [*, n] token rows.
Status rowsForm(grouped::Form form, const Device &device,
                const ExpertCounts &counts, RowWindow window,
                const RowOperands *projections, int count, int64_t n, int64_t k,
                float beta, const GroupedScratch &scratch, cu::Stream stream,
                Status (*launch)(const Launch &)) {
  StatusOr<Launch> l =
      common(form, device, counts, window, count, scratch, stream);
  if (!l)
    return l.takeStatus();
  if (Status s = checkSizes({n, k}); !s)
    return s;
  bool project = form == grouped::Form::Project;
  grouped::Groups &g = l->groups;
  for (int q = 0; q < count; ++q) {
    const RowOperands &p = projections[q];
    if (Status s = checkMatrix("A", p.a.data, p.a.ld, k, 2); !s)
      return s;
    if (Status s = checkExperts("B", p.b, project ? n : k, project ? k : n, 2);
        !s)
      return s;
    if (Status s = checkMatrix("D", p.d.data, p.d.ld, n, 2); !s)
      return s;
    for (auto [what, rows] : {std::pair{"A", &p.a}, {"D", &p.d}})
      if (Status s = checkFirstRow(what, *rows, window); !s)
        return s;
    g.a[q] = tokenOperand(p.a);
    g.b[q] = expertOperand(p.b);
    g.d[q] = tokenOperand(p.d);
  }
  g.n = n;
  g.k = k;
  l->beta = beta;
  return launchIn(device, *l, launch);
}

} // namespace

Status GroupedGemm::project(const Device &device, const ExpertCounts &counts,
                            RowWindow window, const RowOperands *projections,
                            int count, int64_t n, int64_t k,
                            const GroupedScratch &scratch, cu::Stream stream) {
  return rowsForm(grouped::Form::Project, device, counts, window, projections,
                  count, n, k, 0.0f, scratch, stream, grouped::launchProject);
}

Status GroupedGemm::back(const Device &device, const ExpertCounts &counts,
                         RowWindow window, const RowOperands *projections,
                         int count, int64_t n, int64_t k, float beta,
                         const GroupedScratch &scratch, cu::Stream stream) {
  return rowsForm(grouped::Form::Back, device, counts, window, projections,
                  count, n, k, beta, scratch, stream, grouped::launchBack);
}

Status GroupedGemm::weights(const Device &device, const ExpertCounts &counts,
                            RowWindow window, const WeightOperands *projections,
                            int count, int64_t m, int64_t n, bool overwrite,
                            DType gradType, const GroupedScratch &scratch,
                            cu::Stream stream) {
  StatusOr<Launch> l = common(grouped::Form::Weights, device, counts, window,
                              count, scratch, stream);
  if (!l)
    return l.takeStatus();
  if (Status s = checkSizes({m, n}); !s)
    return s;
  if (gradType != DType::F32 && gradType != DType::BF16)
    return fail(std::string("the weight gradients must be f32 or bf16, not ") +
                name(gradType));
  bool bf16 = gradType == DType::BF16;
  if (bf16 && (!overwrite || window.begin != 0 || window.end != counts.rows))
    return fail("bf16 weight gradients are written only by an overwrite of "
                "every token row (nothing is added to bf16); use f32 for "
                "a window or an accumulation");
  grouped::Groups &g = l->groups;
  for (int q = 0; q < count; ++q) {
    const WeightOperands &p = projections[q];
    if (Status s = checkMatrix("A", p.a.data, p.a.ld, m, 2); !s)
      return s;
    if (Status s = checkMatrix("B", p.b.data, p.b.ld, n, 2); !s)
      return s;
    if (Status s = checkExperts("D", p.d, m, n, byteSize(gradType)); !s)
      return s;
    for (auto [what, rows] : {std::pair{"A", &p.a}, {"B", &p.b}})
      if (Status s = checkFirstRow(what, *rows, window); !s)
        return s;
    g.a[q] = tokenOperand(p.a);
    g.b[q] = tokenOperand(p.b);
    g.d[q] = expertOperand(p.d);
  }
  g.m = m;
  g.n = n;
  g.overwrite = overwrite;
  return launchIn(device, *l,
                  bf16 ? grouped::launchWeightsBf16 : grouped::launchWeights);
}

} // namespace tile::rt
