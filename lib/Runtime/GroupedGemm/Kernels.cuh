//===- Kernels.cuh - a grouped GEMM form: its tables, then CUTLASS -------===//
//
// A form's call queues, on the caller's stream:
//   1. setupGroups (one CTA): scans the experts' counts, stops with a
//      message if they do not sum to the rows, and writes each group's
//      problem shape, operand addresses, strides (and, for weights, beta)
//      into the scratch tables: group g = projection * experts + expert;
//   2. for an overwrite of weights from row 0, zeroEmptyExperts;
//   3. CUTLASS's SM90 ptr-array grouped GEMM (warp-specialized cooperative,
//      persistent), which reads the tables: the host never sees the shapes.
// A group whose expert has no rows in the window has M = 0: no tiles.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_RUNTIME_GROUPEDGEMM_KERNELS_CUH
#define TILE_RUNTIME_GROUPEDGEMM_KERNELS_CUH

#include "Launch.h"

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/group_array_problem_shape.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <type_traits>

namespace tile::rt::grouped {

using ProblemShape =
    cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
using Bf16 = cutlass::bfloat16_t;

template <class T> constexpr int alignmentOf() {
  if constexpr (std::is_void_v<T>)
    return 0;
  else
    return 16 / static_cast<int>(sizeof(T));
}

/// The CUTLASS kernel of a form: bf16 A and B in the given layouts
/// (CUTLASS's: A [M, K], B as [K, N]), fp32 accumulation, row-major D.
/// 128 × 256 × 64 tiles, two consumer warp groups (cooperative).
template <class LayoutA, class LayoutB, class ElementC, class ElementD>
struct GemmOf {
  using TileShape = cute::Shape<cute::_128, cute::_256, cute::_64>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;
  static constexpr int kAlignD = alignmentOf<ElementD>();
  static constexpr int kAlignC =
      std::is_void_v<ElementC> ? kAlignD : alignmentOf<ElementC>();
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape,
      ClusterShape, cutlass::epilogue::collective::EpilogueTileAuto, float,
      float, ElementC, cutlass::layout::RowMajor *, kAlignC, ElementD,
      cutlass::layout::RowMajor *, kAlignD,
      cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative,
      cutlass::epilogue::fusion::LinearCombination<ElementD, float, ElementC,
                                                   float>>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Bf16, LayoutA *, 8,
      Bf16, LayoutB *, 8, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>::CollectiveOp;
  using Kernel =
      cutlass::gemm::kernel::GemmUniversal<ProblemShape, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using ElementOut = ElementD;
  using ElementSource = ElementC;
};

/// Byte offsets of a call's tables in its scratch, 128-byte aligned.
struct TableOffsets {
  size_t shapes, a, b, c, d, strideA, strideB, strideC, strideD, beta,
      constants, counts, workspace, total;
};

template <class Kind>
TableOffsets tableOffsets(int groups, size_t workspaceBytes) {
  using K = typename Kind::Kernel;
  TableOffsets t{};
  size_t at = 0;
  auto take = [&](size_t bytes) {
    size_t here = at;
    at = (at + bytes + 127) / 128 * 128;
    return here;
  };
  t.shapes =
      take(groups * sizeof(typename ProblemShape::UnderlyingProblemShape));
  t.a = take(groups * sizeof(void *));
  t.b = take(groups * sizeof(void *));
  t.c = take(groups * sizeof(void *));
  t.d = take(groups * sizeof(void *));
  t.strideA = take(groups * sizeof(typename K::InternalStrideA));
  t.strideB = take(groups * sizeof(typename K::InternalStrideB));
  t.strideC = take(groups * sizeof(typename K::InternalStrideC));
  t.strideD = take(groups * sizeof(typename K::InternalStrideD));
  t.beta = take(groups * sizeof(void *));
  t.constants = take(2 * sizeof(float));
  t.counts = take(groups * sizeof(long long));
  t.workspace = take(workspaceBytes);
  t.total = at;
  return t;
}

/// A stride with its one dynamic mode (M's or K's) set to `ld`.
template <class Stride> __device__ Stride leading(int64_t ld) {
  Stride s{};
  using Mode0 = cute::remove_cvref_t<decltype(cute::get<0>(s))>;
  if constexpr (cute::is_static<Mode0>::value)
    cute::get<1>(s) = ld;
  else
    cute::get<0>(s) = ld;
  return s;
}

/// Everything setupGroups reads, by value (host counts included).
struct SetupParams {
  Groups g;
  int hostCounts[kMaxExperts];
  char *tables;
  TableOffsets at;
};

constexpr int kSetupThreads = 256;
static_assert(kMaxExperts % kSetupThreads == 0,
              "each setup thread scans a whole number of counts");
constexpr int kCountsPerThread = kMaxExperts / kSetupThreads;

template <class Kind>
__global__ void __launch_bounds__(kSetupThreads)
    setupGroups(const __grid_constant__ SetupParams p) {
  using K = typename Kind::Kernel;
  using Shape = typename ProblemShape::UnderlyingProblemShape;
  using ElementD = typename Kind::ElementOut;
  using Scan = cub::BlockScan<long long, kSetupThreads>;
  __shared__ typename Scan::TempStorage scanStorage;
  __shared__ long long firstRow[kMaxExperts], count[kMaxExperts];
  __shared__ bool negative;

  if (threadIdx.x == 0)
    negative = false;
  __syncthreads();
  long long mine[kCountsPerThread];
  for (int i = 0; i < kCountsPerThread; ++i) {
    int e = threadIdx.x * kCountsPerThread + i;
    long long c = 0;
    if (e < p.g.experts) {
      if (!p.g.deviceCounts)
        c = p.hostCounts[e];
      else if (p.g.countBytes == 4)
        c = reinterpret_cast<const int *>(p.g.deviceCounts)[e];
      else
        c = reinterpret_cast<const long long *>(p.g.deviceCounts)[e];
      count[e] = c;
      if (c < 0)
        negative = true;
    }
    mine[i] = c;
  }
  long long total = 0;
  Scan(scanStorage).ExclusiveSum(mine, mine, total);
  for (int i = 0; i < kCountsPerThread; ++i) {
    int e = threadIdx.x * kCountsPerThread + i;
    if (e < p.g.experts)
      firstRow[e] = mine[i];
  }
  __syncthreads();
  if (negative || total != p.g.rows) {
    // A device-side assert, as PyTorch's: the driver prints the message,
    // the stream's next synchronization fails with
    // CUDA_ERROR_ASSERT ("device-side assert triggered") and the context
    // is lost. (NDEBUG is defined for CUTLASS's sake, so not assert().)
    // One thread asserts; the others leave (a trap of theirs could end
    // the kernel first, as a launch failure without the message).
    if (threadIdx.x == 0) {
      printf("tile: grouped GEMM: the experts' token counts %s (sum %lld), "
             "not %lld rows\n",
             negative ? "include a negative one" : "do not sum to the rows",
             total, p.g.rows);
      __assert_fail("tile grouped GEMM: the experts' token counts on the "
                    "device must be >= 0 and sum to the token rows",
                    __FILE__, __LINE__, __func__);
    }
    return;
  }

  char *t = p.tables;
  auto *shapes = reinterpret_cast<Shape *>(t + p.at.shapes);
  auto *ptrA = reinterpret_cast<const Bf16 **>(t + p.at.a);
  auto *ptrB = reinterpret_cast<const Bf16 **>(t + p.at.b);
  auto *ptrC = reinterpret_cast<const ElementD **>(t + p.at.c);
  auto *ptrD = reinterpret_cast<ElementD **>(t + p.at.d);
  auto *strideA =
      reinterpret_cast<typename K::InternalStrideA *>(t + p.at.strideA);
  auto *strideB =
      reinterpret_cast<typename K::InternalStrideB *>(t + p.at.strideB);
  auto *strideC =
      reinterpret_cast<typename K::InternalStrideC *>(t + p.at.strideC);
  auto *strideD =
      reinterpret_cast<typename K::InternalStrideD *>(t + p.at.strideD);
  auto *beta = reinterpret_cast<const float **>(t + p.at.beta);
  auto *constants = reinterpret_cast<float *>(t + p.at.constants);
  auto *counts = reinterpret_cast<long long *>(t + p.at.counts);
  if (threadIdx.x == 0) {
    constants[0] = 0.0f;
    constants[1] = 1.0f;
  }

  int groups = p.g.experts * p.g.projections;
  for (int g = threadIdx.x; g < groups; g += kSetupThreads) {
    int q = g / p.g.experts, e = g % p.g.experts;
    long long first = firstRow[e];
    long long begin = max(first, static_cast<long long>(p.g.windowBegin));
    long long end =
        min(first + count[e], static_cast<long long>(p.g.windowEnd));
    int rows = static_cast<int>(max(end - begin, 0LL));
    if (q == 0)
      counts[e] = count[e];
    const Operand &a = p.g.a[q], &b = p.g.b[q], &d = p.g.d[q];
    auto rowsAt = [&](const Operand &o, size_t bytes) {
      return o.data +
             static_cast<unsigned long long>((begin - o.step) * o.ld) * bytes;
    };
    auto expertAt = [&](const Operand &o, size_t bytes) {
      return o.data + static_cast<unsigned long long>(e * o.step) * bytes;
    };
    ptrA[g] = reinterpret_cast<const Bf16 *>(rowsAt(a, sizeof(Bf16)));
    strideA[g] = leading<typename K::InternalStrideA>(a.ld);
    strideB[g] = leading<typename K::InternalStrideB>(b.ld);
    strideD[g] = leading<typename K::InternalStrideD>(d.ld);
    strideC[g] = leading<typename K::InternalStrideC>(d.ld);
    if (p.g.form == Form::Weights) {
      // D_e [m, n] += A_eᵀ B_e: K is the expert's rows in the window.
      shapes[g] = Shape(rows > 0 ? static_cast<int>(p.g.m) : 0,
                        static_cast<int>(p.g.n), rows);
      ptrB[g] = reinterpret_cast<const Bf16 *>(rowsAt(b, sizeof(Bf16)));
      ptrD[g] = reinterpret_cast<ElementD *>(expertAt(d, sizeof(ElementD)));
      // The expert's first rows of an overwrite call replace D unread.
      bool replace = p.g.overwrite && first >= p.g.windowBegin;
      beta[g] = constants + (replace ? 0 : 1);
    } else {
      shapes[g] = Shape(rows, static_cast<int>(p.g.n), static_cast<int>(p.g.k));
      ptrB[g] = reinterpret_cast<const Bf16 *>(expertAt(b, sizeof(Bf16)));
      ptrD[g] = reinterpret_cast<ElementD *>(rowsAt(d, sizeof(ElementD)));
      beta[g] = constants + 1;
    }
    ptrC[g] = ptrD[g];
  }
}

/// Zeroes D_e ([m, n] of the form's D element, every projection) of each
/// expert with no rows. (A template, as every kernel here: each form's
/// unit has its own.)
template <class Kind>
__global__ void zeroEmptyExperts(const long long *counts, Operand d0,
                                 Operand d1, int experts, long long m,
                                 long long n) {
  using ElementD = typename Kind::ElementOut;
  int g = blockIdx.y, e = g % experts;
  if (counts[e] != 0)
    return;
  const Operand &d = g < experts ? d0 : d1;
  ElementD *base = reinterpret_cast<ElementD *>(d.data) + e * d.step;
  long long size = m * n;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < size;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    base[(i / n) * d.ld + i % n] = ElementD(0.0f);
}

inline Status cudaStatus(cudaError_t error, const char *what) {
  if (error == cudaSuccess)
    return Status::ok();
  return Status::error(std::string("grouped GEMM: ") + what + ": " +
                       cudaGetErrorString(error));
}

/// CUTLASS's arguments for `groups` groups whose tables start at `tables`
/// (null tables: for sizing the workspace only).
template <class Kind>
typename Kind::Gemm::Arguments arguments(int groups, char *tables,
                                         const TableOffsets &at, int smCount,
                                         float beta) {
  using Gemm = typename Kind::Gemm;
  using K = typename Kind::Kernel;
  using Shape = typename ProblemShape::UnderlyingProblemShape;
  using ElementC = typename Kind::ElementSource;
  using ElementD = typename Kind::ElementOut;
  auto at_ = [&](size_t offset) {
    return tables ? static_cast<void *>(tables + offset) : nullptr;
  };
  typename Gemm::Arguments args;
  args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  args.problem_shape = {groups, static_cast<Shape *>(at_(at.shapes)), nullptr};
  args.mainloop = {static_cast<const Bf16 **>(at_(at.a)),
                   static_cast<typename K::InternalStrideA *>(at_(at.strideA)),
                   static_cast<const Bf16 **>(at_(at.b)),
                   static_cast<typename K::InternalStrideB *>(at_(at.strideB))};
  auto &fusion = args.epilogue.thread;
  fusion.alpha = 1.0f;
  fusion.alpha_ptr = nullptr;
  fusion.alpha_ptr_array = nullptr;
  fusion.dAlpha = {cute::_0{}, cute::_0{}, 0};
  fusion.beta = beta;
  fusion.beta_ptr = nullptr;
  if constexpr (std::is_same_v<ElementD, float>) {
    // fp32 weights: one beta per group (0 where the group replaces D).
    // (bf16 weights have no C: every group replaces D.)
    fusion.beta_ptr_array = static_cast<const float *const *>(at_(at.beta));
    fusion.dBeta = {cute::_0{}, cute::_0{}, 1};
  } else {
    fusion.beta_ptr_array = nullptr;
    fusion.dBeta = {cute::_0{}, cute::_0{}, 0};
  }
  if constexpr (std::is_void_v<ElementC>)
    args.epilogue.ptr_C = nullptr;
  else
    args.epilogue.ptr_C = static_cast<const ElementC **>(at_(at.c));
  args.epilogue.dC =
      static_cast<typename K::InternalStrideC *>(at_(at.strideC));
  args.epilogue.ptr_D = static_cast<ElementD **>(at_(at.d));
  args.epilogue.dD =
      static_cast<typename K::InternalStrideD *>(at_(at.strideD));
  // The SM count sizes the persistent grid; with it given, CUTLASS queries
  // nothing of the device, whose ordinal it would otherwise use.
  args.hw_info.device_id = 0;
  args.hw_info.sm_count = smCount;
  return args;
}

/// The tables of `groups` groups, CUTLASS's workspace (sized for the SM
/// count's persistent grid) last.
template <class Kind> TableOffsets tablesFor(int groups, int smCount) {
  TableOffsets none = tableOffsets<Kind>(groups, 0);
  size_t workspace = Kind::Gemm::get_workspace_size(
      arguments<Kind>(groups, nullptr, none, smCount, 0.0f));
  return tableOffsets<Kind>(groups, workspace);
}

template <class Kind> size_t scratchBytes(int groups, int smCount) {
  return tablesFor<Kind>(groups, smCount).total;
}

template <class Kind> Status launch(const Launch &l) {
  using Gemm = typename Kind::Gemm;
  const Groups &g = l.groups;
  int groups = g.experts * g.projections;
  TableOffsets at = tablesFor<Kind>(groups, l.smCount);
  if (at.total > l.scratchBytes)
    return Status::error("grouped GEMM: the scratch holds " +
                         std::to_string(l.scratchBytes) + " bytes, " +
                         std::to_string(at.total) + " needed");
  auto stream = static_cast<cudaStream_t>(l.stream);
  char *tables = reinterpret_cast<char *>(l.scratch);

  SetupParams p{};
  p.g = l.groups;
  if (!l.groups.deviceCounts)
    for (int e = 0; e < l.groups.experts; ++e)
      p.hostCounts[e] = static_cast<int>(l.hostCounts[e]);
  p.tables = tables;
  p.at = at;
  setupGroups<Kind><<<1, kSetupThreads, 0, stream>>>(p);
  if (Status s = cudaStatus(cudaGetLastError(), "the setup kernel"); !s)
    return s;
  if (g.form == Form::Weights && g.overwrite && g.windowBegin == 0) {
    zeroEmptyExperts<Kind><<<dim3(64, groups), 256, 0, stream>>>(
        reinterpret_cast<const long long *>(tables + at.counts), g.d[0], g.d[1],
        g.experts, g.m, g.n);
    if (Status s = cudaStatus(cudaGetLastError(), "zeroing empty experts"); !s)
      return s;
  }

  auto args = arguments<Kind>(groups, tables, at, l.smCount, l.beta);
  Gemm gemm;
  cutlass::Status status = gemm.can_implement(args);
  if (status == cutlass::Status::kSuccess)
    status = gemm.initialize(args, tables + at.workspace, stream);
  if (status == cutlass::Status::kSuccess)
    status = gemm.run(stream);
  if (status != cutlass::Status::kSuccess)
    return Status::error(std::string("grouped GEMM: CUTLASS: ") +
                         cutlassGetStatusString(status));
  return cudaStatus(cudaGetLastError(), "the GEMM");
}

} // namespace tile::rt::grouped

#endif // TILE_RUNTIME_GROUPEDGEMM_KERNELS_CUH
