//===- KernelSchedule.h - how a kernel is mapped onto the GPU ---*- C++ -*-===//
//
// The choices tile-schedule makes and convert-tile-to-gpu follows, stored on
// each kernel as the attribute
//
//   tile.schedule = {grid = "elements", threads = 128 : i64}
//   tile.schedule = {grid = "rows", threads = 256 : i64}
//   tile.schedule = {ctas = 264 : i64, ctas_per_sm = 2 : i64,
//                    grid = "persistent", threads = 256 : i64}
//
// `grid = "elements"` (purely elementwise kernels) launches a CTA per
// threads × vector_width elements of the flattened [rows, width] tensors,
// so that no thread idles at the end of a row; `"rows"` launches one CTA
// per row; `"persistent"` (kernels with a cross-row reduction) launches
// min(rows, ctas) CTAs that walk the rows, so that the workspace of
// partials has `ctas` rows, not one per row. tile-schedule sizes that grid
// for a DeviceDescription (its options; an H100/H200 by default) and
// records the CTAs per SM it assumed (`ctas_per_sm`), which the lowering
// passes to ptxas so that the whole grid is resident at once.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_IR_KERNELSCHEDULE_H
#define TILE_DIALECT_TILE_IR_KERNELSCHEDULE_H

#include "tile/Target/DeviceDescription.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <cstdint>

namespace mlir::tile {

using ::tile::DeviceDescription;

/// Row reductions whose inputs are ready together share one exchange
/// through shared memory (one barrier for all of them), up to this many.
constexpr int64_t kMaxFusedReductions = 4;

/// The row kernel's shared memory, in floats: a slot per warp per fused
/// reduction, twice, so that consecutive exchanges alternate between the
/// two sets and each needs one barrier instead of two.
inline int64_t rowSharedFloats(int64_t threads) {
  return 2 * kMaxFusedReductions * (threads / 32);
}

struct KernelSchedule {
  /// grid = "elements": the kernel treats its tensors as flat arrays of
  /// rows × width elements (only for isPurelyElementwise kernels).
  bool elementGrid = false;
  /// Threads per CTA: a multiple of 32, at most 1024.
  int64_t threads = 256;
  /// CTAs of a persistent grid; 0 for one CTA per row.
  int64_t ctas = 0;
  /// Columns per thread and access (a power of two, at most 16).
  int64_t vectorWidth = 1;
  /// Rows a CTA works on at once, each by threads / rowsPerCta threads
  /// (whole warps, or a power of two below 32 without a reduction across
  /// rows: validRowsPerCta): narrow rows leave fewer threads idle.
  int64_t rowsPerCta = 1;
  /// A kernel that reduces across rows sums its CTAs' partial rows in its
  /// last CTAs to arrive (`finalize = "folded"`) instead of in a finalize
  /// kernel of its own. Not the default: on an H100 it was 0.1-7 % slower
  /// (docs/Performance.md, "the finalize folded into the row kernel").
  bool foldFinalize = false;

  /// The CTAs per SM a persistent grid was sized for (0: not recorded, as
  /// in a hand-written schedule; gridCtasPerSm then assumes the default
  /// device).
  int64_t ctasPerSm = 0;

  /// A persistent grid fills each SM with 512 threads (two CTAs of 256):
  /// enough to hide latency, few enough that the partials stay small. The
  /// row kernel tells ptxas so (at most 128 registers a thread with 65536
  /// per SM), so that the whole grid is resident at once.
  static constexpr int64_t kPersistentThreadsPerSm = 512;
  /// The fewest registers a thread of a persistent row kernel is left
  /// (below this the exchange and the resident chunks spill).
  static constexpr int64_t kMinPersistentRegisters = 64;
  static constexpr int64_t kDefaultThreads = 256;
  /// An element grid's CTAs: 128 threads measured 0–4 % faster than 256 on
  /// SwiGLU (docs/Performance.md); smaller CTAs end the grid more evenly.
  static constexpr int64_t kElementGridThreads = 128;
  /// A row-reducing kernel's CTAs when its rows are narrow 16-bit ones
  /// (chooseThreads).
  static constexpr int64_t kNarrowRowThreads = 128;
  /// The most vector chunks of a row a thread keeps in registers (the
  /// lowering's resident body): with three inputs and a cross-row
  /// accumulator, four 8-lane chunks are about 130 live values, the most a
  /// 512-thread CTA can keep in its 128 registers per thread.
  static constexpr int64_t kMaxResidentChunks = 4;

  /// Shared memory the driver reserves per CTA (1 KiB since sm_80).
  static constexpr int64_t kReservedSharedBytes = 1024;

  /// CTAs per SM a persistent grid of `threads`-thread CTAs aims for on
  /// `device`: kPersistentThreadsPerSm, within what its threads, registers
  /// (kMinPersistentRegisters a thread) and shared memory allow; at least
  /// one.
  static int64_t persistentCtasPerSm(int64_t threads,
                                     const DeviceDescription &device) {
    int64_t byThreads = device.threadsPerSm / threads;
    int64_t byRegisters =
        device.registersPerSm / (threads * kMinPersistentRegisters);
    int64_t byShared = device.sharedBytesPerSm /
                       (4 * rowSharedFloats(threads) + kReservedSharedBytes);
    return std::max<int64_t>(1, std::min({kPersistentThreadsPerSm / threads,
                                          byThreads, byRegisters, byShared}));
  }
  /// The default size of a persistent grid of `threads`-thread CTAs.
  static int64_t persistentCtas(int64_t threads,
                                const DeviceDescription &device) {
    return device.sms * persistentCtasPerSm(threads, device);
  }
  /// The CTAs per SM this persistent grid assumes (.minnctapersm): the
  /// recorded figure, or what `ctas` needs on `device`, at most what its
  /// threads per SM allow.
  int64_t gridCtasPerSm(const DeviceDescription &device = {}) const {
    if (ctasPerSm)
      return ctasPerSm;
    return std::clamp<int64_t>((ctas + device.sms - 1) / device.sms, 1,
                               device.threadsPerSm / threads);
  }
};

/// The widths `func` is specialized for (tile.specialize, whose entries
/// `w<i> = width` the dialect's verifier checks): (tensor argument i,
/// width), in the attribute's order.
SmallVector<std::pair<unsigned, int64_t>>
getSpecializedWidths(func::FuncOp func);

/// Whether `func` reduces across rows (and so needs a persistent grid).
bool reducesAcrossRows(func::FuncOp func);
/// Whether `func` has any reduction (within or across rows).
bool reducesAnything(func::FuncOp func);

/// Whether every tensor of `func` is [rows, W] with one W for all of them
/// and every op on tensors is elementwise (a cast, an elementwise op or a
/// splat): element (r, c) of every tensor is then element r·W + c of its
/// buffer, and the kernel may ignore rows.
bool isPurelyElementwise(func::FuncOp func);

/// Threads per CTA for `func` at `vectorWidth` (on an element grid or not):
/// 128 for an element grid;
/// 512 for a kernel that reduces across rows with a specialized width of
/// more than two vector chunks per thread at 256; for one with only row
/// reductions, f32 (vectors of at most four lanes) and a specialized width
/// of more than kMaxResidentChunks chunks at 256, the fewest up to 1024
/// that bring it within; otherwise 256. The wider CTAs let the lowering
/// keep rows in registers.
int64_t chooseThreads(func::FuncOp func, int64_t vectorWidth, bool elementGrid);

/// Rows per CTA for `func` at `threads` and `vectorWidth`, for a
/// specialized width (tile.specialize; otherwise 1). A kernel that reduces
/// (over or across rows): the largest power of two that still gives every
/// thread two vector chunks of its row, so that a narrow row does not leave
/// most of the CTA idle at the reduction's barriers; groups of whole warps
/// across rows, down to sub-warp groups over rows. A kernel with no
/// reduction: where a row has fewer vector chunks than the CTA threads,
/// groups of the largest power of two that leaves each thread two. Always
/// valid (validRowsPerCta) for the threads given.
int64_t chooseRowsPerCta(func::FuncOp func, int64_t threads,
                         int64_t vectorWidth);

/// Whether `rows` rows per CTA split `threads` into groups the lowering
/// supports: whole warps, or (not for a kernel that reduces across rows) a
/// power of two below 32.
bool validRowsPerCta(int64_t rows, int64_t threads, bool acrossRows);

/// The default schedule of `func` on `device`.
KernelSchedule defaultSchedule(func::FuncOp func,
                               const DeviceDescription &device = {});

/// The schedule `func` carries, or its default.
KernelSchedule getSchedule(func::FuncOp func);

void setSchedule(func::FuncOp func, const KernelSchedule &schedule);

/// Checks a `tile.schedule` attribute value; `emitError` names the problem.
LogicalResult verifySchedule(Operation *op, Attribute schedule);

} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_IR_KERNELSCHEDULE_H
