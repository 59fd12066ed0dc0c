//===- ResidentRows.cpp - the row kernel's resident body -----------------===//
//
// When every column loop of the row kernel is over one constant width that
// gives each thread few vector chunks (KernelPlan::Resident), the loops are
// unrolled. A thread's chunks are at the same columns on every row, so all
// its loads of a row are issued together, every pass over the row reuses
// them (RMSNorm's backward reads x once, not three times), and a cross-row
// partial stays in registers across rows and is written once per CTA. On a
// persistent grid the loads run one row ahead.
//
//===----------------------------------------------------------------------===//

#include "ResidentRows.h"
#include "BodyEmitter.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

namespace {
class ResidentRows : public BodyEmitter, public RowFolder {
public:
  ResidentRows(KernelFrame &frame, PointEmitter &points,
               const KernelPlan::Resident &resident)
      : BodyEmitter(frame, points), resident(resident),
        vector(frame.schedule.vectorWidth) {}
  void emit();
  /// The chunks in the looped body's order, lane by lane: the same sum. The
  /// values stay in the memo, so a later pass over the row reuses them
  /// instead of loading the row again.
  Value fold(ReduceOp reduce) override;

private:
  /// A thread's vector chunks of the row, at the same columns on every row.
  /// `valid` is null for a chunk every thread has; otherwise the chunk may
  /// lie past the row's end, and its `base` is clamped into the row.
  struct Chunk {
    Value base;
    Value valid;
  };
  /// An input a chunk reads at its own columns.
  struct ChunkLoad {
    BlockArgument input;
    const Chunk *chunk;
  };
  void createChunks();
  /// Issues the loads of the per-row inputs at row `rowIndex`.
  SmallVector<Value> loadRow(Value rowIndex);
  /// The row of this group in the block starting at `blockStart`, clamped
  /// to the last row (the last block's next row is loaded and not used).
  Value groupRow(Value blockStart);
  /// The row loop; returns the thread's cross-row partials after it.
  SmallVector<Value> emitRows(SmallVector<Value> inits);
  /// Evaluates every sink at every chunk, then stores the outputs and adds
  /// the partials into `accs`.
  void emitChunks(MutableArrayRef<Value> accs);
  /// The groups' partials, added in group order into the CTA's row.
  void storePartials(ArrayRef<Value> partials);

  const KernelPlan::Resident &resident;
  int64_t vector;
  /// The row's width, as an index value.
  Value width;
  /// The tensor's last row.
  Value lastRow;
  SmallVector<Chunk> chunks;
  /// Per cross-row reduction, the index of its first partial: one per
  /// chunk and lane, carried by the row loop.
  DenseMap<Operation *, size_t> firstAcc;
  SmallVector<ChunkLoad> rowLoads, columnLoads;
};
} // namespace

void ResidentRows::createChunks() {
  // Chunk k of a thread is vector chunk member + k * perGroup of its row.
  // Only the last may lie past the row's end, for some threads.
  int64_t perGroup = f.schedule.threads / f.schedule.rowsPerCta;
  int64_t vectors = resident.width / vector;
  for (int64_t k = 0; k < resident.chunks; ++k) {
    Value chunk =
        arith::AddIOp::create(b, loc, f.member, f.index(k * perGroup));
    Value valid;
    if ((k + 1) * perGroup > vectors) {
      valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, chunk,
                                    f.index(vectors));
      chunk = arith::MinUIOp::create(b, loc, chunk, f.index(vectors - 1));
    }
    chunks.push_back(
        {arith::MulIOp::create(b, loc, chunk, f.index(vector)), valid});
  }
}

SmallVector<Value> ResidentRows::loadRow(Value rowIndex) {
  SmallVector<Value> vectors;
  for (const ChunkLoad &load : rowLoads) {
    Value at = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, rowIndex, ev.widthOf(load.input)),
        load.chunk->base);
    vectors.push_back(ev.loadVector(f.pointers.lookup(load.input), at));
  }
  return vectors;
}

Value ResidentRows::groupRow(Value blockStart) {
  if (f.schedule.rowsPerCta == 1)
    return arith::MinUIOp::create(b, loc, blockStart, lastRow);
  return arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, blockStart, f.rowGroup), lastRow);
}

void ResidentRows::emit() {
  width = f.index(resident.width);
  createChunks();
  SmallVector<Value> inits;
  for (ReduceOp reduce : f.model.acrossRowReductions) {
    firstAcc[reduce] = inits.size();
    inits.append(resident.chunks * vector,
                 f.identity(reduce.getKind(), b.getF32Type()));
  }
  auto lanes = ev.withLanes(vector);
  SmallVector<Value> partials;
  {
    PointEmitter::MemoScope scope(ev, /*rowsToo=*/true);
    // The inputs a chunk reads at its own columns. Pipelined, the column
    // inputs (weights), the same on every row, are loaded once, here, and
    // the row inputs one row ahead; otherwise both at the top of each row.
    for (const Chunk &chunk : chunks)
      for (BlockArgument input : resident.inputs)
        (f.model.kindOf(input) == ValueKind::Element ? rowLoads : columnLoads)
            .push_back({input, &chunk});
    if (resident.pipelined)
      for (const ChunkLoad &load : columnLoads)
        (void)ev.group(load.input, load.chunk->base);
    partials = emitRows(std::move(inits));
  }
  storePartials(partials);
}

SmallVector<Value> ResidentRows::emitRows(SmallVector<Value> inits) {
  // A persistent CTA walks many rows: it issues the next row's loads
  // before this row's math and exchanges, so that they overlap (ncu: the
  // unpipelined RMSNorm backward kept 0.9 eligible warps per scheduler and
  // 63 % of DRAM bandwidth).
  // The carried loads take registers (kMaxPipelinedChunks).
  lastRow = arith::SubIOp::create(b, loc, f.rows, f.index(1));
  size_t accCount = inits.size();
  if (resident.pipelined) {
    int64_t perCta = f.schedule.rowsPerCta;
    Value firstBlock =
        perCta == 1 ? f.bid
                    : arith::MulIOp::create(b, loc, f.bid, f.index(perCta));
    llvm::append_range(inits, loadRow(groupRow(firstBlock)));
  }
  OpBuilder::InsertionGuard guard(b);
  auto folding = ev.withFolder(this);
  scf::ForOp rowLoop = createRowLoop(inits);
  ValueRange iterArgs = rowLoop.getRegionIterArgs();
  SmallVector<Value> accs(iterArgs.take_front(accCount));
  SmallVector<Value> nextLoads;
  if (resident.pipelined) {
    Value nextBlock = arith::AddIOp::create(b, loc, rowLoop.getInductionVar(),
                                            rowLoop.getStep());
    nextLoads = loadRow(groupRow(nextBlock));
    for (auto [load, vector] :
         llvm::zip(rowLoads, iterArgs.slice(accCount, rowLoads.size())))
      ev.remember(load.input, load.chunk->base, ev.extractLanes(vector));
  }
  // Every load of the row before any math (those not carried).
  for (const ChunkLoad &load : llvm::concat<ChunkLoad>(columnLoads, rowLoads))
    (void)ev.group(load.input, load.chunk->base);
  for (const KernelPlan::Sink &sink : f.plan.allSinks())
    ev.prepareRowValues(sink.value);
  prepareRowOutputs();
  emitChunks(accs);
  storeRowOutputs();
  llvm::append_range(accs, nextLoads);
  accs.push_back(ev.finishRow());
  scf::YieldOp::create(b, loc, accs);
  return SmallVector<Value>(rowLoop.getResults().take_front(accCount));
}

void ResidentRows::emitChunks(MutableArrayRef<Value> accs) {
  SmallVector<KernelPlan::Sink> sinks = f.plan.allSinks();
  // After the row's exchanges, the last pass computes its values again
  // from the loaded lanes, widening 16-bit ones from their words:
  // otherwise the first pass's f32 lanes stay live across the exchange,
  // twice the registers of the loaded words (ptxas, RMSNorm's bf16
  // forward at 16384 columns: 138 -> 94 registers, 0.64 -> 0.83 of the
  // ceiling). Not in a pipelined body: it already carries the next row's
  // words, ptxas gave it as many registers either way, and the second
  // widening cost its backward 1-2 % (docs/Performance.md). Where even
  // that keeps too much live, the column inputs, the same on every row
  // and so in L2, are loaded again too (reloadColumns).
  SmallVector<SmallVector<Lanes>> computed;
  SmallVector<SmallVector<Value>> columns;
  {
    if (!resident.pipelined)
      ev.forgetComputed(resident.reloadColumns);
    auto rewiden = ev.withRewidening(!resident.pipelined);
    // Every value first, then the stores (outputs may alias inputs).
    for (const Chunk &chunk : chunks) {
      computed.emplace_back();
      columns.push_back(sinkColumns(sinks, chunk.base));
      for (auto [sink, column] : llvm::zip(sinks, columns.back()))
        computed.back().push_back(ev.group(sink.value, column));
    }
  }
  Value rowStart = arith::MulIOp::create(b, loc, ev.row(), width);
  for (auto [chunkIndex, chunk] : llvm::enumerate(chunks)) {
    Value mask = f.andOf(chunk.valid, ev.rowValid());
    for (auto [sink, column, values] :
         llvm::zip(sinks, columns[chunkIndex], computed[chunkIndex])) {
      if (sink.result) {
        f.emitIf(mask, [&, &values = values, &sink = sink, &column = column] {
          ev.storeGroup(values, f.resultPointers[*sink.result],
                        sinkAddress(sink, rowStart, column));
        });
        continue;
      }
      size_t first = firstAcc.lookup(sink.partialOf) + chunkIndex * vector;
      for (auto [lane, value] : llvm::enumerate(values)) {
        Value &acc = accs[first + lane];
        Value sum = f.combine(sink.partialOf.getKind(), acc, value);
        acc = mask ? arith::SelectOp::create(b, loc, mask, sum, acc) : sum;
      }
    }
  }
}

void ResidentRows::storePartials(ArrayRef<Value> partials) {
  // Without a reduction across rows there is nothing to store, and the
  // groups need not meet (a barrier per group would only wait).
  if (f.model.acrossRowReductions.empty())
    return;
  for (int64_t g = 0; g < f.schedule.rowsPerCta; ++g) {
    if (g > 0)
      gpu::BarrierOp::create(b, loc);
    Value mine = f.schedule.rowsPerCta == 1
                     ? Value()
                     : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             f.rowGroup, f.index(g));
    f.emitIf(mine, [&] {
      for (ReduceOp reduce : f.model.acrossRowReductions)
        for (auto [chunkIndex, chunk] : llvm::enumerate(chunks))
          f.emitIf(chunk.valid, [&, &chunk = chunk, chunkIndex = chunkIndex] {
            Value at = f.workspaceAt(f.workspaceBase.lookup(reduce), f.bid,
                                     width, chunk.base);
            size_t first = firstAcc.lookup(reduce) + chunkIndex * vector;
            ArrayRef<Value> mine(partials.data() + first, vector);
            // Earlier groups' sum first, then this group's.
            Lanes sums = g == 0 ? Lanes(mine) : ev.loadGroup(f.workspace, at);
            if (g > 0)
              f.combineInto(reduce.getKind(), sums, mine);
            ev.storeGroup(sums, f.workspace, at);
          });
    });
  }
}

Value ResidentRows::fold(ReduceOp reduce) {
  Value acc = f.identity(reduce.getKind(), b.getF32Type());
  for (const Chunk &chunk : chunks) {
    Value none =
        chunk.valid ? f.identity(reduce.getKind(), b.getF32Type()) : Value();
    for (Value element : ev.group(reduce.getInput(), chunk.base)) {
      if (chunk.valid)
        element = arith::SelectOp::create(b, loc, chunk.valid, element, none);
      acc = f.combine(reduce.getKind(), acc, element);
    }
  }
  return acc;
}

void gpu_lowering::emitResidentRows(KernelFrame &frame, PointEmitter &points,
                                    const KernelPlan::Resident &resident) {
  ResidentRows(frame, points, resident).emit();
}
