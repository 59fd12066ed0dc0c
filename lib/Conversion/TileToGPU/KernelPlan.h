//===- KernelPlan.h - what the lowering decides for a kernel ----*- C++ -*-===//
//
// The plan is computed from the kernel model and its schedule before any
// IR is built: which column loops the row kernel has and what each writes,
// whether a row of constant width is held in registers (the resident body)
// and how, the workspace's layout, whether there is a finalize kernel, and
// the launch facts of both kernels. The emitters follow it; the manifest
// prints it. Nothing else decides these.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_KERNELPLAN_H
#define TILE_LIB_CONVERSION_TILETOGPU_KERNELPLAN_H

#include "KernelModel.h"
#include "tile/Dialect/Tile/IR/KernelSchedule.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace mlir::tile::gpu_lowering {

/// The lowering follows the kernel's tile.schedule as it is.
using Schedule = KernelSchedule;

/// A resident body holds at most this many vector chunks of a row per
/// thread (the schedule chooses threads with it in mind).
constexpr int64_t kMaxResidentChunks = KernelSchedule::kMaxResidentChunks;
/// ... or more chunks, as long as a thread keeps at most this many input
/// and partial values of its row (four 8-lane chunks of three inputs and
/// a partial).
constexpr int64_t kMaxResidentValues = 128;

/// Registers a resident body may keep across its row's exchange (its
/// loaded lanes, a 16-bit one as half a register, and its cross-row
/// partials) before it loads the column inputs again after the exchange
/// instead. Measured on an H200 (docs/Performance.md): at 128 (RMSNorm's
/// f32 backward at 16384 columns, which spilled) reloading took it from
/// 0.67 to 0.89 of the ceiling; at 80 and below it cost up to 6 % (one
/// kernel at 64 gained 6 %, its f16 twin nothing).
constexpr int64_t kMaxHeldRegisters = 96;

/// A persistent resident body loads the next row while it works on this
/// one when each thread has at most this many chunks (the loads take
/// registers: with more, ptxas spilled RMSNorm's backward at 16384
/// columns and 512 threads, 400 bytes).
constexpr int64_t kMaxPipelinedChunks = 2;

/// At most this many partial rows a finalize thread loads before it adds
/// them (in order): the loads of a warp's rows are in flight together.
constexpr int64_t kMaxFinalizeUnroll = 36;

/// Columns one finalize CTA sums (its grid is ceildiv(width, this)); its
/// warps split the partial rows.
constexpr int64_t kFinalizeColumns = 32;

/// Classes of provably equal widths. A class's members are width sources:
/// the values whose rule (KernelModel::widthRule) is not `SameAs`, which
/// are the values the emitter builds a width for.
class WidthClasses {
public:
  explicit WidthClasses(const KernelModel &model);
  /// The source of `value`'s width: its `SameAs` chain followed, a slice's
  /// size read through `tensor.dim`.
  Value sourceOf(Value value) const;
  bool equal(Value a, Value b) const {
    return classes.isEquivalent(sourceOf(a), sourceOf(b));
  }
  /// A member of `value`'s class whose width is a constant, if there is
  /// one, else its own source: the bound a column loop over the class uses
  /// (a constant bound folds the loop and the alignment test).
  Value loopBound(Value value) const;
  /// The constant width of a source, if it has one.
  std::optional<int64_t> constantOf(Value source) const;
  /// The value of an index computed from constants and specialized widths.
  std::optional<int64_t> constantIndex(Value index, int depth = 0) const;

private:
  const KernelModel &model;
  llvm::EquivalenceClasses<Value> classes;
  /// sourceOf's answers so far.
  mutable DenseMap<Value, Value> sources;
  /// Widths the JIT specialized the arguments for (tile.specialize).
  DenseMap<unsigned, int64_t> specialized;
};

struct KernelPlan {
  /// What a column loop of the row kernel writes: result `result` per
  /// element, or the partial of a cross-row reduction (`partialOf`).
  struct Sink {
    Value value;
    std::optional<unsigned> result;
    ReduceOp partialOf;
    /// A result made of equal column ranges (a concat's parts, KernelPlan.cpp
    /// equalParts) is written range by range: this sink writes range `part`
    /// of `partWidth`'s width, and its loop is over that width. The chunk at
    /// column c of the loop computes column c of every range before it
    /// stores any. Where part k reads its inputs at columns c + j·W of a
    /// buffer with the result's pitch (silu_and_mul's halves), no other
    /// chunk touches those elements, so the result may overwrite that
    /// input (silu_and_mul's backward in place); a slice at another offset
    /// would not be safe. Null: the whole row.
    Value partWidth;
    int64_t part = 0;
  };
  /// Sinks whose widths are provably equal share one column loop; `width`
  /// is the first sink's value (its class gives the bound).
  struct ColumnLoop {
    Value width;
    SmallVector<Sink> sinks;
  };
  /// A per-row result, written once per row.
  struct RowOutput {
    Value value;
    unsigned result;
  };
  /// A resident body: every column loop of the row kernel is over the
  /// constant `width`, which gives each thread `chunks` vector chunks of
  /// `inputs`, the arguments it reads at the columns it computes, in order.
  struct Resident {
    int64_t width;
    int64_t chunks;
    llvm::SetVector<BlockArgument> inputs;
    /// Loads run one row ahead (a persistent grid, few chunks).
    bool pipelined;
    /// The last pass loads the column inputs (weights) again instead of
    /// keeping them across the exchange (kMaxHeldRegisters).
    bool reloadColumns;
  };
  /// A block of the fp32 workspace: `rows` partial rows a CTA (the CTA's
  /// row, or with several rows per CTA a scratch row per group for the
  /// looped body) of a cross-row reduction's width, for every CTA.
  struct WorkspaceBlock {
    ReduceOp reduce;
    int64_t rowsPerCta;
    /// The looped body's scratch rows (after the reduction's CTA block).
    bool scratch() const { return rowsPerCta != 1; }
  };
  /// One GPU kernel's launch facts.
  struct Launch {
    int64_t threads;
    int64_t sharedFloats;
    /// `.maxntid` (known_block_size), where it is set.
    std::optional<int64_t> knownBlockSize;
    /// `.minnctapersm`, where it is set (a persistent grid).
    std::optional<int64_t> minCtasPerSm;
  };

  SmallVector<ColumnLoop> columnLoops;
  SmallVector<RowOutput> rowOutputs;
  std::optional<Resident> resident;
  SmallVector<WorkspaceBlock> workspace;
  Launch rowKernel;
  /// The results the finalize writes (summed across rows or per column);
  /// none: there is no finalize.
  SmallVector<unsigned> finalizeOutputs;
  /// The finalize runs at the end of the row kernel, in its last CTAs to
  /// arrive (FoldedFinalize.cpp), instead of as a kernel of its own. Those
  /// CTAs wait for the others, so the row kernel is launched cooperatively
  /// (the driver places the whole grid at once, or fails the launch).
  bool foldedFinalize = false;
  /// The separate finalize kernel's launch facts (and the threads of the
  /// folded finalize, which are the row kernel's).
  Launch finalizeKernel;
  /// Partial rows a finalize warp loads before it adds them.
  int64_t finalizeUnroll = 1;

  bool hasFinalize() const { return !finalizeOutputs.empty(); }
  bool hasFinalizeKernel() const { return hasFinalize() && !foldedFinalize; }
  /// Every sink of every column loop, in loop order.
  SmallVector<Sink> allSinks() const;
};

/// Plans `model` under `schedule`; emits a diagnostic (and fails) where the
/// schedule cannot run the kernel.
FailureOr<KernelPlan> planKernel(const KernelModel &model,
                                 const WidthClasses &widths,
                                 const Schedule &schedule);

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_KERNELPLAN_H
