//===- RowKernel.cpp - the row kernel's looped body and element grid -----===//
//
// The row kernel walks its rows in one of two bodies:
//
//  - looped (here): each pass over the row is a strided column loop, for
//    any width and alignment, and a cross-row partial is read, added to and
//    written back in the workspace on every row;
//  - resident (ResidentRows.cpp): when every column loop is over one
//    constant width that gives each thread few vector chunks, the loops are
//    unrolled and a thread's chunks stay in registers across the row's
//    passes.
//
// The resident body needs 16-byte aligned buffers; the kernel tests that
// once and otherwise takes the looped body, scalar throughout. Both bodies
// add the same values in the same order: the results are the same bits.
//
// A purely elementwise kernel may instead run on an element grid: a vector
// chunk of the flattened tensors per thread.
//
//===----------------------------------------------------------------------===//

#include "RowKernel.h"
#include "BodyEmitter.h"
#include "ResidentRows.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

namespace {
using Sink = KernelPlan::Sink;

/// Every value of a chunk at columns col.., its inputs loaded first.
/// Every value first, then (the caller) every store: an output may be the
/// buffer of an input (an operator run in place), so nothing of the chunk
/// is written before all of its inputs are read. A result that needs fewer
/// inputs (a primal result next to gradients) would otherwise overwrite an
/// input another result still has to load.
SmallVector<Lanes> computeChunk(PointEmitter &ev, ArrayRef<Sink> sinks,
                                ArrayRef<Value> columns) {
  for (auto [sink, col] : llvm::zip(sinks, columns))
    ev.prefetch(sink.value, col);
  SmallVector<Lanes> computed;
  for (auto [sink, col] : llvm::zip(sinks, columns))
    computed.push_back(ev.group(sink.value, col));
  return computed;
}

class ElementGrid : public BodyEmitter {
public:
  using BodyEmitter::BodyEmitter;
  void emit();
};

class LoopedRows : public BodyEmitter, public RowFolder {
public:
  using BodyEmitter::BodyEmitter;
  void emit();
  /// A thread's fold over its columns: each thread folds its columns into
  /// one accumulator; a vector group is folded lane by lane, so the order
  /// is fixed for a given width.
  Value fold(ReduceOp reduce) override { return foldTogether({reduce}, {})[0]; }
  /// The reductions folded together in one pass over the row, each into
  /// an accumulator of its own (the same values in the same order as alone:
  /// the same bits), their inputs loaded once.
  SmallVector<Value> foldTogether(ArrayRef<ReduceOp> members,
                                  ArrayRef<OnlineSum> online) override;
  /// Online sums where the kernel has no resident body: a resident body
  /// and its looped twin (misaligned buffers) must give the same bits, and
  /// a resident row is read once whatever is folded.
  bool foldsOnline() const override { return !f.plan.resident; }

private:
  /// foldTogether's members of one width: one pass over the row.
  SmallVector<Value> foldPass(ArrayRef<ReduceOp> members,
                              ArrayRef<OnlineSum> online);
  /// The workspace index of a column of this group's partial row.
  Value partialAt(ReduceOp reduce, Value width, Value col);
  void zeroPartials();
  void emitRows();
  /// With several rows per CTA: the groups' rows, added in group order
  /// into the CTA's row.
  void sumGroupPartials();

  /// Each row group of each CTA owns one row of partials: with one row per
  /// CTA it is the CTA's row, which the finalize reads; with several, a
  /// scratch row, summed into the CTA's after the last row.
  Value partialRow;
};
} // namespace

void ElementGrid::emit() {
  // Every tensor is [rows, W] of one W (isPurelyElementwise), so element
  // (r, c) is element r·W + c of every buffer: with row 0 the kernel
  // evaluates its results at flat indices. A thread takes one vector chunk;
  // only the last chunk of all may be partial (scalar), and no thread
  // idles at the end of a row.
  SmallVector<Sink> sinks = f.plan.allSinks();
  ev.beginRow(f.index(0), Value(), Value());
  int64_t vector = f.schedule.vectorWidth;
  Value total = arith::MulIOp::create(
      b, loc, f.rows, ev.loopWidth(f.plan.columnLoops.front().width));
  Value thread = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, f.bid, f.index(f.schedule.threads)),
      f.tid);
  Value first = arith::MulIOp::create(b, loc, thread, f.index(vector));
  Value past = arith::AddIOp::create(b, loc, first, f.index(vector));
  auto chunk = [&](Value at) {
    // (A purely elementwise kernel has no concat: no sink is a part.)
    SmallVector<Value> columns(sinks.size(), at);
    SmallVector<Lanes> computed = computeChunk(ev, sinks, columns);
    for (auto [sink, values] : llvm::zip(sinks, computed))
      ev.storeGroup(values, f.resultPointers[*sink.result], at);
  };
  auto scalar = [&] {
    Value end = arith::MinUIOp::create(b, loc, past, total);
    stridedLoop(first, end, f.index(1), chunk);
  };
  if (vector == 1)
    return scalar();
  Value whole =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, past, total);
  auto branch = scf::IfOp::create(b, loc, f.andOf(f.aligned, whole),
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  {
    PointEmitter::MemoScope scope(ev);
    auto lanes = ev.withLanes(vector);
    chunk(first);
  }
  b.setInsertionPointToStart(branch.elseBlock());
  scalar();
}

void LoopedRows::emit() {
  int64_t perCta = f.schedule.rowsPerCta;
  partialRow =
      perCta == 1
          ? f.bid
          : arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, f.bid, f.index(perCta)),
                f.rowGroup);
  zeroPartials();
  {
    OpBuilder::InsertionGuard guard(b);
    auto folding = ev.withFolder(this);
    emitRows();
  }
  if (perCta != 1 && f.model.hasAcrossRows())
    sumGroupPartials();
}

Value LoopedRows::partialAt(ReduceOp reduce, Value width, Value col) {
  Value base = (f.schedule.rowsPerCta == 1 ? f.workspaceBase : f.scratchBase)
                   .lookup(reduce);
  return f.workspaceAt(base, partialRow, width, col);
}

void LoopedRows::zeroPartials() {
  // Zeroed first, so that a group without rows contributes nothing.
  for (ReduceOp reduce : f.model.acrossRowReductions) {
    Value width = ev.widthOf(reduce);
    Value zero = f.identity(reduce.getKind(), b.getF32Type());
    columnLoop(width, [&](Value col) {
      ev.storeGroup(Lanes(ev.lanes(), zero), f.workspace,
                    partialAt(reduce, width, col));
    });
  }
}

void LoopedRows::emitRows() {
  createRowLoop({});
  prepareRowOutputs();
  for (const KernelPlan::ColumnLoop &loop : f.plan.columnLoops) {
    ArrayRef<Sink> sinks = loop.sinks;
    Value width = ev.loopWidth(loop.width);
    for (const Sink &sink : sinks)
      ev.prepareRowValues(sink.value);
    Value rowStart = arith::MulIOp::create(b, loc, ev.row(), width);
    columnLoop(width, [&](Value col) {
      SmallVector<Value> columns = sinkColumns(sinks, col);
      SmallVector<Lanes> computed = computeChunk(ev, sinks, columns);
      for (auto [sink, column, values] : llvm::zip(sinks, columns, computed)) {
        f.emitIf(ev.rowValid(),
                 [&, &sink = sink, &column = column, &values = values] {
                   if (sink.result) {
                     ev.storeGroup(values, f.resultPointers[*sink.result],
                                   sinkAddress(sink, rowStart, column));
                     return;
                   }
                   ReduceOp reduce = sink.partialOf;
                   Value at = partialAt(reduce, width, col);
                   Lanes sums = ev.loadGroup(f.workspace, at);
                   f.combineInto(reduce.getKind(), sums, values);
                   ev.storeGroup(sums, f.workspace, at);
                 });
      }
    });
  }
  storeRowOutputs();
  scf::YieldOp::create(b, loc, ev.finishRow());
}

void LoopedRows::sumGroupPartials() {
  int64_t perCta = f.schedule.rowsPerCta;
  gpu::BarrierOp::create(b, loc);
  Value firstGroup = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           f.rowGroup, f.index(0));
  f.emitIf(firstGroup, [&] {
    Value groups = arith::MulIOp::create(b, loc, f.bid, f.index(perCta));
    for (ReduceOp reduce : f.model.acrossRowReductions) {
      Value width = ev.widthOf(reduce);
      columnLoop(width, [&](Value col) {
        Lanes sums;
        for (int64_t g = 0; g < perCta; ++g) {
          Value scratchRow = arith::AddIOp::create(b, loc, groups, f.index(g));
          Lanes values = ev.loadGroup(
              f.workspace, f.workspaceAt(f.scratchBase.lookup(reduce),
                                         scratchRow, width, col));
          if (g == 0)
            sums = values;
          else
            f.combineInto(reduce.getKind(), sums, values);
        }
        ev.storeGroup(
            sums, f.workspace,
            f.workspaceAt(f.workspaceBase.lookup(reduce), f.bid, width, col));
      });
    }
  });
}

SmallVector<Value> LoopedRows::foldTogether(ArrayRef<ReduceOp> members,
                                            ArrayRef<OnlineSum> online) {
  // One pass per width class: members over provably equal widths share it
  // (an online sum goes with its max).
  SmallVector<Value> folds(members.size() + online.size());
  SmallVector<bool> folded(members.size(), false);
  SmallVector<Value> inputs;
  for (ReduceOp member : members)
    inputs.push_back(member.getInput());
  for (size_t first = 0; first < members.size(); ++first) {
    if (folded[first])
      continue;
    SmallVector<size_t> group;
    for (size_t i = first; i < members.size(); ++i)
      if (!folded[i] && f.widthClasses.equal(inputs[i], inputs[first])) {
        group.push_back(i);
        folded[i] = true;
      }
    SmallVector<ReduceOp> groupMembers;
    for (size_t i : group)
      groupMembers.push_back(members[i]);
    SmallVector<OnlineSum> groupOnline;
    SmallVector<size_t> onlineIndices;
    for (auto [index, sum] : llvm::enumerate(online))
      if (auto at = llvm::find(group, sum.max); at != group.end()) {
        groupOnline.push_back(
            {sum.sum, static_cast<size_t>(at - group.begin())});
        onlineIndices.push_back(index);
      }
    SmallVector<Value> groupFolds = foldPass(groupMembers, groupOnline);
    for (auto [i, member] : llvm::enumerate(group))
      folds[member] = groupFolds[i];
    for (auto [i, index] : llvm::enumerate(onlineIndices))
      folds[members.size() + index] = groupFolds[group.size() + i];
  }
  return folds;
}

SmallVector<Value> LoopedRows::foldPass(ArrayRef<ReduceOp> members,
                                        ArrayRef<OnlineSum> online) {
  Type f32Type = b.getF32Type();
  SmallVector<Value> inputs, accs;
  SmallVector<ReductionKind> kinds;
  for (ReduceOp member : members) {
    inputs.push_back(member.getInput());
    kinds.push_back(member.getKind());
    accs.push_back(f.identity(member.getKind(), f32Type));
  }
  for (size_t i = 0; i < online.size(); ++i)
    accs.push_back(f.f32(0.0));
  // An online sum's step over a group of lanes of x, whose running max
  // went from `before` to `after`: sum * exp(before - after) (1 where they
  // are equal: no exp of -inf - -inf) + the lanes' exp(x - after). While
  // the max is -inf every lane is: they are shifted by 0 instead, and add
  // exp(-inf) = 0 (one select per group, not per lane).
  auto onlineStep = [&](Value sum, Value before, Value after,
                        ArrayRef<Value> xs, arith::FastMathFlags expFlags) {
    Value total = f.rescaleSum(sum, before, after, expFlags);
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, after,
                              f.identity(ReductionKind::Max, f32Type));
    Value shift = arith::SelectOp::create(b, loc, empty, f.f32(0.0), after);
    for (Value x : xs)
      total = arith::AddFOp::create(
          b, loc, total,
          math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, shift),
                              expFlags));
    return total;
  };
  auto fold = [&](Value start, Value end, Value stride, int64_t width) {
    auto loop = scf::ForOp::create(b, loc, start, end, stride, accs);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    PointEmitter::MemoScope scope(ev);
    auto lanes = ev.withLanes(width);
    Value base = loop.getInductionVar();
    if (width > 1)
      base = arith::MulIOp::create(b, loc, base, f.index(width));
    for (Value input : inputs)
      ev.prefetch(input, base);
    SmallVector<Value> next;
    for (auto [index, input] : llvm::enumerate(inputs)) {
      Value total = loop.getRegionIterArg(index);
      for (Value element : ev.group(input, base))
        total = f.combine(kinds[index], total, element);
      next.push_back(total);
    }
    for (auto [index, sum] : llvm::enumerate(online))
      next.push_back(onlineStep(loop.getRegionIterArg(members.size() + index),
                                loop.getRegionIterArg(sum.max), next[sum.max],
                                ev.group(inputs[sum.max], base),
                                sum.expFlags()));
    scf::YieldOp::create(b, loc, next);
    return SmallVector<Value>(loop.getResults());
  };
  Value end = ev.widthOf(inputs.front());
  Value tail;
  int64_t width = f.schedule.vectorWidth;
  if (width > 1) {
    Value groups = arith::DivUIOp::create(b, loc, end, f.index(width));
    Value vectorGroups =
        arith::SelectOp::create(b, loc, f.aligned, groups, f.index(0));
    accs = fold(f.member, vectorGroups, f.groupSize, width);
    tail = arith::MulIOp::create(b, loc, vectorGroups, f.index(width));
  }
  Value start = width > 1 ? Value(arith::AddIOp::create(b, loc, tail, f.member))
                          : f.member;
  return fold(start, end, f.groupSize, 1);
}

void gpu_lowering::emitRowBody(KernelFrame &frame, PointEmitter &points) {
  if (frame.schedule.elementGrid)
    return ElementGrid(frame, points).emit();
  if (!frame.plan.resident)
    return LoopedRows(frame, points).emit();
  OpBuilder &b = frame.b;
  auto branch =
      scf::IfOp::create(b, frame.loc, frame.aligned, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  emitResidentRows(frame, points, *frame.plan.resident);
  // Misaligned buffers: the looped body, whose vector paths fold away.
  b.setInsertionPointToStart(branch.elseBlock());
  llvm::SaveAndRestore misaligned(
      frame.aligned, Value(arith::ConstantIntOp::create(b, frame.loc, 0, 1)));
  LoopedRows(frame, points).emit();
}
