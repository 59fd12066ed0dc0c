//===- Emitter.h - the state of one kernel's emission -----------*- C++ -*-===//
//
// Private to the lowering. The emitter is split in two files:
// KernelEmitter.cpp sets a kernel up and evaluates values at a point
// (uniform, per row, per element); RowBodies.cpp writes the loops around
// them — the row kernel's looped and resident bodies and the finalize.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_EMITTER_H
#define TILE_LIB_CONVERSION_TILETOGPU_EMITTER_H

#include "KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace mlir::tile::gpu_lowering {

enum class Mode { Rows, Finalize };

using Lanes = SmallVector<Value, 8>;

inline Type elementTypeOf(Value value) { return getElementTypeOrSelf(value); }

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
/// registers; see emitResidentRows).
constexpr int64_t kMaxPipelinedChunks = 2;

/// Element evaluations (Emitter::group) a kernel may take before the
/// lowering gives up with an error: a fixed allowance plus a multiple of
/// its op count. A kernel evaluates each op a few times (the vector loop,
/// the scalar tail, each loop over the row); the bound keeps a pathological
/// DAG (each level a concat of the one below, 2^levels evaluations) from
/// exhausting time and memory.
constexpr int64_t kEvaluationAllowance = 100000;
constexpr int64_t kEvaluationsPerOp = 16;

class Emitter {
public:
  Emitter(const KernelModel &model, const Schedule &schedule, Mode mode,
          gpu::GPUModuleOp module)
      : model(model), func(model.func), schedule(schedule), mode(mode),
        module(module), b(module.getContext()), loc(func.getLoc()),
        maxEvaluations(kEvaluationAllowance +
                       kEvaluationsPerOp *
                           static_cast<int64_t>(
                               func.getBody().front().getOperations().size())) {
  }

  LogicalResult emit();

private:
  // Set-up (KernelEmitter.cpp).
  void createKernel();
  LogicalResult emitPrologue();
  Value widthOf(Value value);

  // Evaluation (KernelEmitter.cpp).
  Value uniformValue(Value value);
  Value rowValue(Value value);
  /// The values of `value` at columns base, ..., base + lanes - 1 of the
  /// current row (one value in the scalar loops).
  Lanes group(Value value, Value base);
  /// The value at one column (scalar loops and the finalize).
  Value elementAt(Value value, Value col) { return group(value, col)[0]; }
  Lanes loadGroup(Value buffer, Value at);
  /// One 16-byte load of `lanes` elements, and its lanes.
  Value loadVector(Value buffer, Value at);
  Lanes extractLanes(Value vector);
  /// The input arguments `value` reads at the columns it is evaluated at
  /// (through elementwise ops, casts and broadcasts), by argument number.
  SmallVector<BlockArgument> inputsAtColumn(Value value);
  /// Loads, at columns base.., every input argument that `value` reads at
  /// those same columns, before any of the chunk's math.
  void prefetch(Value value, Value base);
  void storeGroup(ArrayRef<Value> values, Value buffer, Value at);
  void prepareRowValues(Value value);
  Value emitScalarOp(Operation *op, ArrayRef<Value> operands);
  /// The flat global holding a non-splat tensor constant's elements.
  Value constantTable(arith::ConstantOp constant);
  Value convert(Value value, Type to);
  /// Widens lane `lane` of a loaded 16-bit vector from its 32-bit word:
  /// bf16 to f32 by a shift or a mask of the word's bits; with `opaque`,
  /// after an xor with an opaque zero (see rewidenFromWords).
  Value widenFromWord(Value vector, int64_t lane, Type to, bool opaque);
  /// Reduces `reduce` over the row, together with every other row
  /// reduction whose inputs are ready (one exchange), and memoizes them.
  Value reduceRow(ReduceOp reduce);
  /// Whether every row reduction `value` depends on is already reduced.
  bool inputsReduced(Value value);
  /// A thread's fold of `input` over its columns of the row.
  Value foldLooped(ReduceOp reduce);
  Value foldResident(ReduceOp reduce);
  Value acrossRowsTotal(ReduceOp reduce, Value col);
  Lanes emitConcat(ValueRange inputs, Value base);
  Lanes branch(Value condition, function_ref<Lanes()> then,
               function_ref<Lanes()> otherwise, Type type);

  // Bodies (RowBodies.cpp).
  /// What a column loop of the row kernel writes: an output per element,
  /// or (pointer null) the partial of a cross-row reduction.
  struct Sink {
    Value value;
    Value pointer;
    ReduceOp partialOf;
  };
  /// The sinks whose widths are provably equal share one column loop.
  struct SinkGroup {
    Value width;
    SmallVector<Sink> sinks;
  };
  void emitRowBody();
  /// grid = "elements": a vector chunk of the flattened tensors per thread.
  void emitElementGrid();
  void collectSinks();
  /// Loads every input of the sinks at columns col.., then evaluates them.
  SmallVector<Lanes> computeChunk(ArrayRef<Sink> sinks, Value col);
  /// A group's loop bound: a constant (specialized) width of its class if
  /// there is one, so the bound and the alignment test fold.
  Value loopWidth(Value width);
  /// A resident body: every column loop of the row kernel is over the
  /// constant `width`, which gives each thread `chunks` vector chunks of
  /// `inputs`, the arguments it reads at the columns it computes
  /// (inputsAtColumn of every sink and row reduction), in order.
  struct ResidentPlan {
    int64_t width;
    int64_t chunks;
    llvm::SetVector<BlockArgument> inputs;
    /// The last pass loads the column inputs (weights) again instead of
    /// keeping them across the exchange (kMaxHeldRegisters).
    bool reloadColumns;
  };
  std::optional<ResidentPlan> planResident();
  /// Every sink of every column loop, in group order.
  SmallVector<Sink> allSinks() const;
  void emitLoopedRows();
  void emitResidentRows(const ResidentPlan &plan);
  /// The first row of the row loop, its step, and (several rows per CTA)
  /// this group's row and whether it exists. The loop carries `inits` and,
  /// last, rowParity; its body must yield finishRow() last.
  scf::ForOp createRowLoop(ValueRange inits);
  /// Runs `body` only where `condition` (null: always) holds.
  void emitIf(Value condition, function_ref<void()> body);
  void storeRowOutputs();
  void emitFinalizeBody();
  /// Sums, cooperatively over the whole CTA, every cross-row reduction's
  /// partial rows at this thread's column (finalizeTotals).
  void sumPartials(Value col, Value lane, Value slice);

  // Helpers (KernelEmitter.cpp).
  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value f32(double value) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(value));
  }
  Value identity(ReductionKind kind, Type type);
  Value combine(ReductionKind kind, Value a, Value c);
  /// Reduces each thread's values over the row's group of threads: one
  /// exchange through shared memory for all of them.
  SmallVector<Value> blockReduce(ArrayRef<ReductionKind> kinds,
                                 SmallVector<Value> values);
  /// Ends a row of the row loop: the parity the next row starts its
  /// exchanges with, for the loop to carry.
  Value finishRow();
  Value indexToF32(Value value);
  Value andOf(Value a, Value c);
  /// `into[l] = into[l] ⊕ values[l]` for every lane, `into` first.
  void combineInto(ReductionKind kind, Lanes &into, ArrayRef<Value> values);
  /// The workspace index of column `col` of partial row `partialRow` in the
  /// block at `base` (workspaceBase or scratchBase) of rows `width` wide.
  Value workspaceAt(Value base, Value partialRow, Value width, Value col);
  /// Visits every column `< end` of the row: `body(base)` handles columns
  /// base .. base + lanes - 1. With a vector width, aligned rows go `lanes`
  /// columns at a time with 16-byte accesses and a scalar loop takes the
  /// tail; misaligned rows take the scalar loop throughout.
  void columnLoop(Value end, function_ref<void(Value)> body);
  /// One strided loop at the current lane count.
  void stridedLoop(Value start, Value end, Value stride,
                   function_ref<void(Value)> body);
  Value computeAlignment();

  const KernelModel &model;
  func::FuncOp func;
  const Schedule &schedule;
  Mode mode;
  gpu::GPUModuleOp module;
  OpBuilder b;
  Location loc;

  gpu::GPUFuncOp kernel;
  // Maps that computeAlignment walks keep their insertion order: walking a
  // DenseMap of Values follows pointer addresses, and the emitted IR
  // changed from run to run.
  llvm::MapVector<Value, Value> pointers; // tensor argument -> buffer
  SmallVector<Value> resultPointers;
  DenseMap<Value, Value> argWidths;
  Value rows, ctas, workspace, shared;
  Value tid, threads, bid, grid;
  /// A CTA works on rowsPerCta rows at once: `member` is a thread's index
  /// within its row's group of `groupSize` threads, `rowGroup` the group's
  /// index.
  Value member, groupSize, rowGroup;
  /// i1: the group's row exists (only with several rows per CTA).
  Value rowValid;
  /// Per cross-row reduction: the offset of its `[ctas, width]` block of
  /// CTA partials in the workspace, and with several rows per CTA, of the
  /// looped body's `[ctas * rowsPerCta, width]` block of group partials.
  DenseMap<Operation *, Value> workspaceBase, scratchBase;
  /// The finalize's sums of the partials at this thread's column.
  DenseMap<Operation *, Value> finalizeTotals;

  /// Per non-splat constant: its table, read through memref.get_global.
  llvm::MapVector<Operation *, Value> constantTables;
  /// Element values evaluated so far (group), against kMaxEvaluations.
  int64_t evaluations = 0;
  int64_t maxEvaluations;

  IRMapping uniform;
  llvm::MapVector<Value, Value> widths;
  DenseMap<Value, Value> rowMemo;
  DenseMap<std::pair<Value, Value>, Lanes> elementMemo;
  Value row;
  /// The set of shared slots (0 or 1) of the row's first exchange, carried
  /// by the row loop, and the row's exchanges so far (blockReduce): each
  /// exchange takes the other set than the one before, across rows too.
  Value rowParity;
  int64_t exchangesInRow = 0;
  /// Lanes of the loop being emitted: 1, or the schedule's vector width.
  int64_t lanes = 1;
  /// Uniform i1: every buffer and offset allows vector accesses.
  Value aligned;
  /// Set in a resident body after the row's exchanges: widening a loaded
  /// 16-bit lane reads it out of its 32-bit word again (widenFromWord).
  bool rewidenFromWords = false;
  /// i32 zero, hidden from the optimizers (widenFromWord).
  Value opaqueZero;
  /// A loaded 16-bit vector as i32 words (widenFromWord).
  DenseMap<Value, Value> loadedWords;

  /// The row kernel's column loops (collectSinks).
  llvm::EquivalenceClasses<Value> equalWidths;
  SmallVector<SinkGroup> sinkGroups;
  SmallVector<std::pair<Value, Value>> rowOutputs; // value, buffer

  /// A resident body's chunks: this thread's vector chunks of the row, at
  /// the same columns on every row. `valid` is null for a chunk every
  /// thread has; otherwise the chunk may lie past the row's end, and its
  /// `base` is clamped into the row.
  struct Chunk {
    Value base;
    Value valid;
  };
  SmallVector<Chunk> residentChunks;
};

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_EMITTER_H
