//===- RowBodies.cpp - the loops of the row and finalize kernels ---------===//
//
// The row kernel walks its rows in one of two bodies:
//
//  - looped: each pass over the row is a strided column loop, for any width
//    and alignment, and a cross-row partial is read, added to and written
//    back in the workspace on every row;
//  - resident: when every column loop is over one constant width that gives
//    each thread at most kMaxResidentChunks vector chunks, the loops are
//    unrolled. A thread's chunks are at the same columns on every row, so
//    all its loads of a row are issued together, every pass over the row
//    reuses them (RMSNorm's backward reads x once, not three times), and a
//    cross-row partial stays in registers across rows and is written once
//    per CTA. On a persistent grid the loads run one row ahead.
//
// The resident body needs 16-byte aligned buffers; the kernel tests that
// once and otherwise takes the looped body, scalar throughout. Both bodies
// add the same values in the same order: the results are the same bits.
//
// The finalize sums the CTAs' partial rows of each cross-row reduction:
// a CTA takes kFinalizeColumns columns and its warps split the rows,
// up to kMaxFinalizeUnroll rows a step.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

//===----------------------------------------------------------------------===//
// The row kernel
//===----------------------------------------------------------------------===//

void Emitter::collectSinks() {
  // Values the launcher checks to be equally wide (elementwise operands,
  // see sameWidthValues) share one loop even when their widths are
  // different parameters — the primal result next to the gradients of a
  // return-primal backward reads each input once, not once per loop. The
  // classes are of width values (index SSA values of the kernel).
  for (Operation &op : func.getBody().front()) {
    SmallVector<Value> same = model.sameWidthValues(op);
    for (size_t i = 1; i < same.size(); ++i)
      equalWidths.unionSets(widthOf(same[0]), widthOf(same[i]));
  }
  auto addSink = [&](Value width, Sink sink) {
    for (SinkGroup &group : sinkGroups)
      if (equalWidths.isEquivalent(group.width, width)) {
        group.sinks.push_back(sink);
        return;
      }
    sinkGroups.push_back({width, {sink}});
  };
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [index, result] : llvm::enumerate(returnOp.getOperands())) {
    ValueKind kind = model.kindOf(result);
    if (kind == ValueKind::Element)
      addSink(widthOf(result), {result, resultPointers[index], {}});
    else if (kind == ValueKind::RowValue)
      rowOutputs.push_back({result, resultPointers[index]});
  }
  for (ReduceOp reduce : model.acrossRowReductions)
    addSink(widthOf(reduce), {reduce.getInput(), Value(), reduce});
}

Value Emitter::loopWidth(Value width) {
  if (equalWidths.contains(width))
    for (Value other : equalWidths.members(width))
      if (other.getDefiningOp<arith::ConstantIndexOp>())
        return other;
  return width;
}

std::optional<Emitter::ResidentPlan> Emitter::planResident() {
  int64_t vector = schedule.vectorWidth;
  if (vector == 1)
    return std::nullopt;
  SmallVector<Value> loops;
  for (SinkGroup &group : sinkGroups)
    loops.push_back(group.width);
  for (ReduceOp reduce : model.rowReductions)
    loops.push_back(widthOf(reduce.getInput()));
  if (loops.empty() || !llvm::all_of(loops, [&](Value width) {
        return equalWidths.isEquivalent(loops.front(), width);
      }))
    return std::nullopt;
  auto constant =
      loopWidth(loops.front()).getDefiningOp<arith::ConstantIndexOp>();
  if (!constant)
    return std::nullopt;
  int64_t width = constant.value();
  int64_t perGroup = schedule.threads / schedule.rowsPerCta;
  int64_t chunks = llvm::divideCeil(width / vector, perGroup);
  // A chunk keeps the lanes of every input it reads and of every cross-row
  // partial live; kMaxResidentChunks is measured for RMSNorm's backward
  // (three inputs and a partial), and a kernel that keeps fewer values a
  // chunk may hold more chunks within the same registers.
  llvm::SetVector<BlockArgument> inputs;
  for (const Sink &sink : allSinks())
    for (BlockArgument input : inputsAtColumn(sink.value))
      inputs.insert(input);
  for (ReduceOp reduce : model.rowReductions)
    for (BlockArgument input : inputsAtColumn(reduce.getInput()))
      inputs.insert(input);
  int64_t perChunk =
      vector *
      static_cast<int64_t>(inputs.size() + model.acrossRowReductions.size());
  int64_t limit = std::max<int64_t>(
      kMaxResidentChunks, kMaxResidentValues / std::max<int64_t>(perChunk, 1));
  if (width <= 0 || width % vector != 0 || chunks > limit)
    return std::nullopt;
  // What stays live across the exchange once 16-bit lanes are kept as
  // words (emitResidentRows), in registers.
  int64_t heldHalves = 0;
  for (BlockArgument input : inputs)
    heldHalves += elementTypeOf(input).getIntOrFloatBitWidth() <= 16 ? 1 : 2;
  heldHalves += 2 * static_cast<int64_t>(model.acrossRowReductions.size());
  bool reloadColumns = chunks * vector * heldHalves / 2 > kMaxHeldRegisters;
  return ResidentPlan{width, chunks, std::move(inputs), reloadColumns};
}

SmallVector<Emitter::Sink> Emitter::allSinks() const {
  SmallVector<Sink> sinks;
  for (const SinkGroup &group : sinkGroups)
    llvm::append_range(sinks, group.sinks);
  return sinks;
}

SmallVector<Lanes> Emitter::computeChunk(ArrayRef<Sink> sinks, Value col) {
  // Every value of the chunk first, then (the caller) every store: an
  // output may be the buffer of an input (an operator run in place), so
  // nothing of the chunk is written before all of its inputs are read. A
  // result that needs fewer inputs (a primal result next to gradients)
  // would otherwise overwrite an input another result still has to load.
  for (const Sink &sink : sinks)
    prefetch(sink.value, col);
  SmallVector<Lanes> computed;
  for (const Sink &sink : sinks)
    computed.push_back(group(sink.value, col));
  return computed;
}

void Emitter::emitElementGrid() {
  // Every tensor is [rows, W] of one W (isPurelyElementwise), so element
  // (r, c) is element r·W + c of every buffer: with row 0 the kernel
  // evaluates its results at flat indices. A thread takes one vector chunk;
  // only the last chunk of all may be partial (scalar), and no thread
  // idles at the end of a row.
  collectSinks();
  SmallVector<Sink> sinks = allSinks();
  row = index(0);
  int64_t vector = schedule.vectorWidth;
  Value total =
      arith::MulIOp::create(b, loc, rows, loopWidth(sinkGroups.front().width));
  Value thread = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bid, index(schedule.threads)), tid);
  Value first = arith::MulIOp::create(b, loc, thread, index(vector));
  Value past = arith::AddIOp::create(b, loc, first, index(vector));
  auto chunk = [&](Value at) {
    SmallVector<Lanes> computed = computeChunk(sinks, at);
    for (auto [sink, values] : llvm::zip(sinks, computed))
      storeGroup(values, sink.pointer, at);
  };
  auto scalar = [&] {
    Value end = arith::MinUIOp::create(b, loc, past, total);
    stridedLoop(first, end, index(1), chunk);
  };
  if (vector == 1)
    return scalar();
  Value whole =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, past, total);
  auto branch = scf::IfOp::create(b, loc, andOf(aligned, whole),
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  auto saved = elementMemo;
  lanes = vector;
  chunk(first);
  lanes = 1;
  elementMemo = std::move(saved);
  b.setInsertionPointToStart(branch.elseBlock());
  scalar();
}

void Emitter::emitRowBody() {
  if (schedule.elementGrid)
    return emitElementGrid();
  collectSinks();
  std::optional<ResidentPlan> plan = planResident();
  if (!plan)
    return emitLoopedRows();
  auto branch = scf::IfOp::create(b, loc, aligned, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  emitResidentRows(*plan);
  // Misaligned buffers: the looped body, whose vector paths fold away.
  b.setInsertionPointToStart(branch.elseBlock());
  Value wasAligned = aligned;
  aligned = arith::ConstantIntOp::create(b, loc, 0, 1);
  emitLoopedRows();
  aligned = wasAligned;
}

scf::ForOp Emitter::createRowLoop(ValueRange inits) {
  // The CTA walks blocks of rowsPerCta rows; every group takes every step
  // (the barriers of a row reduction need the whole CTA), and a group past
  // the last row computes on the last row but writes nothing.
  int64_t perCta = schedule.rowsPerCta;
  Value start =
      perCta == 1 ? bid : arith::MulIOp::create(b, loc, bid, index(perCta));
  Value step =
      perCta == 1 ? grid : arith::MulIOp::create(b, loc, grid, index(perCta));
  SmallVector<Value> carried(inits);
  carried.push_back(index(0));
  auto rowLoop = scf::ForOp::create(b, loc, start, rows, step, carried);
  b.setInsertionPointToStart(rowLoop.getBody());
  row = rowLoop.getInductionVar();
  rowParity = rowLoop.getRegionIterArgs().back();
  if (perCta > 1) {
    Value mine = arith::AddIOp::create(b, loc, row, rowGroup);
    rowValid =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, mine, rows);
    Value last = arith::SubIOp::create(b, loc, rows, index(1));
    row = arith::MinUIOp::create(b, loc, mine, last);
  }
  rowMemo.clear();
  exchangesInRow = 0;
  return rowLoop;
}

void Emitter::emitIf(Value condition, function_ref<void()> body) {
  if (!condition)
    return body();
  auto branch = scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  body();
}

void Emitter::storeRowOutputs() {
  if (rowOutputs.empty())
    return;
  SmallVector<Value> values;
  for (auto &[value, pointer] : rowOutputs)
    values.push_back(rowValue(value));
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, member, index(0));
  emitIf(andOf(first, rowValid), [&] {
    for (auto [value, output] : llvm::zip(values, rowOutputs))
      memref::StoreOp::create(b, loc, value, output.second, ValueRange{row});
  });
}

void Emitter::emitLoopedRows() {
  // Each row group of each CTA owns one row of partials: zeroed first, so
  // that a group without rows contributes nothing. With one row per CTA it
  // is the CTA's row, which the finalize reads; with several, a scratch row,
  // summed into the CTA's after the last row.
  int64_t perCta = schedule.rowsPerCta;
  Value partialRow =
      perCta == 1
          ? bid
          : arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, bid, index(perCta)),
                rowGroup);
  auto partialAt = [&](ReduceOp reduce, Value width, Value col) {
    Value base = (perCta == 1 ? workspaceBase : scratchBase).lookup(reduce);
    return workspaceAt(base, partialRow, width, col);
  };
  for (ReduceOp reduce : model.acrossRowReductions) {
    Value width = widthOf(reduce);
    Value zero = identity(reduce.getKind(), b.getF32Type());
    columnLoop(width, [&](Value col) {
      storeGroup(Lanes(lanes, zero), workspace, partialAt(reduce, width, col));
    });
  }

  {
    OpBuilder::InsertionGuard guard(b);
    createRowLoop({});
    for (SinkGroup &sinkGroup : sinkGroups) {
      SmallVector<Sink> &sinks = sinkGroup.sinks;
      Value width = loopWidth(sinkGroup.width);
      for (Sink &sink : sinks)
        prepareRowValues(sink.value);
      Value rowStart = arith::MulIOp::create(b, loc, row, width);
      columnLoop(width, [&](Value col) {
        SmallVector<Lanes> computed = computeChunk(sinks, col);
        for (auto [sink, values] : llvm::zip(sinks, computed)) {
          emitIf(rowValid, [&, &sink = sink, &values = values] {
            if (sink.pointer) {
              Value at = arith::AddIOp::create(b, loc, rowStart, col);
              storeGroup(values, sink.pointer, at);
              return;
            }
            Value at = partialAt(sink.partialOf, width, col);
            Lanes sums = loadGroup(workspace, at);
            combineInto(sink.partialOf.getKind(), sums, values);
            storeGroup(sums, workspace, at);
          });
        }
      });
    }
    storeRowOutputs();
    scf::YieldOp::create(b, loc, finishRow());
  }
  if (perCta == 1 || model.acrossRowReductions.empty())
    return;

  // The groups' rows, added in group order into the CTA's row.
  gpu::BarrierOp::create(b, loc);
  Value firstGroup = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           rowGroup, index(0));
  emitIf(firstGroup, [&] {
    Value groups = arith::MulIOp::create(b, loc, bid, index(perCta));
    for (ReduceOp reduce : model.acrossRowReductions) {
      Value width = widthOf(reduce);
      columnLoop(width, [&](Value col) {
        Lanes sums;
        for (int64_t g = 0; g < perCta; ++g) {
          Value scratchRow = arith::AddIOp::create(b, loc, groups, index(g));
          Lanes values =
              loadGroup(workspace, workspaceAt(scratchBase.lookup(reduce),
                                               scratchRow, width, col));
          if (g == 0)
            sums = values;
          else
            combineInto(reduce.getKind(), sums, values);
        }
        storeGroup(sums, workspace,
                   workspaceAt(workspaceBase.lookup(reduce), bid, width, col));
      });
    }
  });
}

void Emitter::emitResidentRows(const ResidentPlan &plan) {
  int64_t vector = schedule.vectorWidth;
  int64_t perGroup = schedule.threads / schedule.rowsPerCta;
  int64_t vectors = plan.width / vector;
  Value width = index(plan.width);

  // Chunk k of a thread is vector chunk member + k * perGroup of its row.
  // Only the last may lie past the row's end, for some threads.
  residentChunks.clear();
  for (int64_t k = 0; k < plan.chunks; ++k) {
    Value chunk = arith::AddIOp::create(b, loc, member, index(k * perGroup));
    Value valid;
    if ((k + 1) * perGroup > vectors) {
      valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, chunk,
                                    index(vectors));
      chunk = arith::MinUIOp::create(b, loc, chunk, index(vectors - 1));
    }
    residentChunks.push_back(
        {arith::MulIOp::create(b, loc, chunk, index(vector)), valid});
  }

  // A thread's cross-row partials: per reduction, chunk and lane, carried
  // by the row loop.
  SmallVector<Value> inits;
  DenseMap<Operation *, size_t> firstAcc;
  for (ReduceOp reduce : model.acrossRowReductions) {
    firstAcc[reduce] = inits.size();
    inits.append(plan.chunks * vector,
                 identity(reduce.getKind(), b.getF32Type()));
  }

  SmallVector<Sink> sinks = allSinks();

  // A persistent CTA walks many rows: it issues the next row's loads
  // before this row's math and exchanges, so that they overlap (ncu: the
  // unpipelined RMSNorm backward kept 0.9 eligible warps per scheduler and
  // 63 % of DRAM bandwidth). The carried loads take registers: with more
  // than kMaxPipelinedChunks chunks, ptxas spilled (RMSNorm's backward at
  // 16384 columns, 512 threads: 400 bytes).
  bool pipelined = schedule.ctas && plan.chunks <= kMaxPipelinedChunks;

  // The inputs a chunk reads at its own columns. Pipelined, the column
  // inputs (weights), the same on every row, are loaded once, here, and
  // the row inputs one row ahead; otherwise both at the top of each row.
  auto savedElements = elementMemo;
  auto savedRows = rowMemo;
  lanes = vector;
  struct ChunkLoad {
    BlockArgument input;
    const Chunk *chunk;
  };
  SmallVector<ChunkLoad> rowLoads, columnLoads;
  for (const Chunk &chunk : residentChunks) {
    for (BlockArgument input : plan.inputs)
      (model.kindOf(input) == ValueKind::Element ? rowLoads : columnLoads)
          .push_back({input, &chunk});
  }
  if (pipelined)
    for (const ChunkLoad &load : columnLoads)
      (void)group(load.input, load.chunk->base);
  // The last row's next row is clamped to the tensor's last row, loaded and
  // not used.
  auto loadRow = [&](Value rowIndex) {
    SmallVector<Value> vectors;
    for (const ChunkLoad &load : rowLoads) {
      Value at = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, rowIndex, widthOf(load.input)),
          load.chunk->base);
      vectors.push_back(loadVector(pointers.lookup(load.input), at));
    }
    return vectors;
  };
  int64_t perCta = schedule.rowsPerCta;
  Value lastRow = arith::SubIOp::create(b, loc, rows, index(1));
  auto groupRow = [&](Value blockStart) -> Value {
    if (perCta == 1)
      return arith::MinUIOp::create(b, loc, blockStart, lastRow);
    return arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, blockStart, rowGroup), lastRow);
  };
  size_t accCount = inits.size();
  if (pipelined) {
    Value firstBlock =
        perCta == 1 ? bid : arith::MulIOp::create(b, loc, bid, index(perCta));
    llvm::append_range(inits, loadRow(groupRow(firstBlock)));
  }

  SmallVector<Value> partials;
  {
    OpBuilder::InsertionGuard guard(b);
    scf::ForOp rowLoop = createRowLoop(inits);
    ValueRange iterArgs = rowLoop.getRegionIterArgs();
    SmallVector<Value> accs(iterArgs.take_front(accCount));
    SmallVector<Value> nextLoads;
    if (pipelined) {
      Value nextBlock = arith::AddIOp::create(b, loc, rowLoop.getInductionVar(),
                                              rowLoop.getStep());
      nextLoads = loadRow(groupRow(nextBlock));
      for (auto [load, vector] :
           llvm::zip(rowLoads, iterArgs.slice(accCount, rowLoads.size())))
        elementMemo[{load.input, load.chunk->base}] = extractLanes(vector);
    }
    // Every load of the row before any math (those not carried).
    for (const ChunkLoad &load : llvm::concat<ChunkLoad>(columnLoads, rowLoads))
      (void)group(load.input, load.chunk->base);
    for (Sink &sink : sinks)
      prepareRowValues(sink.value);
    // After the row's exchanges, the last pass computes its values again
    // from the loaded lanes, widening 16-bit ones from their words:
    // otherwise the first pass's f32 lanes stay live across the exchange,
    // twice the registers of the loaded words (ptxas, RMSNorm's bf16
    // forward at 16384 columns: 138 -> 94 registers, 0.64 -> 0.83 of the
    // ceiling). Not in a pipelined body: it already carries the next row's
    // words, ptxas gave it as many registers either way, and the second
    // widening cost its backward 1-2 % (docs/Performance.md). Where even
    // that keeps too much live, the column inputs, the same on every row
    // and so in L2, are loaded again too (plan.reloadColumns).
    if (!pipelined) {
      // (Erasing from a DenseMap leaves its other iterators valid.)
      for (auto it = elementMemo.begin(); it != elementMemo.end(); ++it)
        if (!isa<BlockArgument>(it->first.first) ||
            (plan.reloadColumns &&
             model.kindOf(it->first.first) == ValueKind::Column))
          elementMemo.erase(it);
      rewidenFromWords = true;
    }
    // Every value first, then the stores (outputs may alias inputs).
    SmallVector<SmallVector<Lanes>> computed;
    for (const Chunk &chunk : residentChunks) {
      computed.emplace_back();
      for (Sink &sink : sinks)
        computed.back().push_back(group(sink.value, chunk.base));
    }
    rewidenFromWords = false;
    Value rowStart = arith::MulIOp::create(b, loc, row, width);
    for (auto [chunkIndex, chunk] : llvm::enumerate(residentChunks)) {
      Value mask = andOf(chunk.valid, rowValid);
      for (auto [sink, values] : llvm::zip(sinks, computed[chunkIndex])) {
        if (sink.pointer) {
          emitIf(mask, [&, &values = values, &sink = sink] {
            Value at = arith::AddIOp::create(b, loc, rowStart, chunk.base);
            storeGroup(values, sink.pointer, at);
          });
          continue;
        }
        size_t first = firstAcc.lookup(sink.partialOf) + chunkIndex * vector;
        for (auto [lane, value] : llvm::enumerate(values)) {
          Value &acc = accs[first + lane];
          Value sum = combine(sink.partialOf.getKind(), acc, value);
          acc = mask ? arith::SelectOp::create(b, loc, mask, sum, acc) : sum;
        }
      }
    }
    storeRowOutputs();
    llvm::append_range(accs, nextLoads);
    accs.push_back(finishRow());
    scf::YieldOp::create(b, loc, accs);
    partials.assign(rowLoop.getResults().begin(),
                    rowLoop.getResults().begin() + accCount);
  }
  elementMemo = std::move(savedElements);
  rowMemo = std::move(savedRows);

  // The groups' partials, added in group order into the CTA's row.
  for (int64_t g = 0; g < schedule.rowsPerCta; ++g) {
    if (g > 0)
      gpu::BarrierOp::create(b, loc);
    Value mine = schedule.rowsPerCta == 1
                     ? Value()
                     : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             rowGroup, index(g));
    emitIf(mine, [&] {
      for (ReduceOp reduce : model.acrossRowReductions)
        for (auto [chunkIndex, chunk] : llvm::enumerate(residentChunks))
          emitIf(chunk.valid, [&, &chunk = chunk, chunkIndex = chunkIndex] {
            Value at = workspaceAt(workspaceBase.lookup(reduce), bid, width,
                                   chunk.base);
            size_t first = firstAcc.lookup(reduce) + chunkIndex * vector;
            ArrayRef<Value> mine(partials.data() + first, vector);
            // Earlier groups' sum first, then this group's.
            Lanes sums = g == 0 ? Lanes(mine) : loadGroup(workspace, at);
            if (g > 0)
              combineInto(reduce.getKind(), sums, mine);
            storeGroup(sums, workspace, at);
          });
    });
  }
  lanes = 1;
  residentChunks.clear();
}

//===----------------------------------------------------------------------===//
// The finalize kernel
//===----------------------------------------------------------------------===//

void Emitter::sumPartials(Value col, Value lane, Value slice) {
  // Warp w adds partial rows w, w + warps, ... in order; the warps' sums
  // meet in shared memory and are added in warp order: deterministic.
  int64_t warps = schedule.threads / 32;
  for (ReduceOp reduce : model.acrossRowReductions) {
    Value width = widthOf(reduce);
    // Threads past the last column load a column that exists (or element
    // 0 of a workspace with none) and store nothing.
    Value last = arith::SubIOp::create(
        b, loc, arith::MaxUIOp::create(b, loc, width, index(1)), index(1));
    Value column = arith::MinUIOp::create(b, loc, col, last);
    // `unroll` rows a step: their loads first (rows past the last load the
    // last and are not added), then the sums in row order. A warp's share
    // of the grid's partial rows, up to kMaxFinalizeUnroll, is one step:
    // the finalize has a CTA per 32 columns, few to cover the memory
    // latency with (ncu, RMSNorm's backward at 4096 x 1024: 6.9 us at 8
    // rows a step, 5.0 us at 33).
    int64_t unroll = std::clamp<int64_t>(llvm::divideCeil(schedule.ctas, warps),
                                         1, kMaxFinalizeUnroll);
    Value init = identity(reduce.getKind(), b.getF32Type());
    Value lastRow = arith::SubIOp::create(b, loc, ctas, index(1));
    auto loop = scf::ForOp::create(b, loc, slice, ctas, index(warps * unroll),
                                   ValueRange{init});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<std::pair<Value, Value>> loaded; // exists, partial
      for (int64_t u = 0; u < unroll; ++u) {
        Value partialRow = arith::AddIOp::create(b, loc, loop.getInductionVar(),
                                                 index(u * warps));
        Value exists = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                             partialRow, ctas);
        partialRow = arith::MinUIOp::create(b, loc, partialRow, lastRow);
        Value offset = workspaceAt(workspaceBase.lookup(reduce), partialRow,
                                   width, column);
        loaded.push_back(
            {u == 0 ? Value() : exists,
             memref::LoadOp::create(b, loc, workspace, ValueRange{offset})});
      }
      Value sum = loop.getRegionIterArg(0);
      for (auto [exists, partial] : loaded) {
        Value added = combine(reduce.getKind(), sum, partial);
        sum = exists ? arith::SelectOp::create(b, loc, exists, added, sum)
                     : added;
      }
      scf::YieldOp::create(b, loc, sum);
    }
    memref::StoreOp::create(b, loc, loop.getResult(0), shared, ValueRange{tid});
    gpu::BarrierOp::create(b, loc);
    Value total = memref::LoadOp::create(b, loc, shared, ValueRange{lane});
    for (int64_t w = 1; w < warps; ++w) {
      Value slot = arith::AddIOp::create(b, loc, lane, index(w * 32));
      total = combine(reduce.getKind(), total,
                      memref::LoadOp::create(b, loc, shared, ValueRange{slot}));
    }
    // The next reduction may overwrite the slots only once all have read.
    gpu::BarrierOp::create(b, loc);
    finalizeTotals[reduce] = total;
  }
}

void Emitter::emitFinalizeBody() {
  // A CTA per kFinalizeColumns columns: lane l of every warp works on
  // column bid * kFinalizeColumns + l; warp 0 writes the results.
  static_assert(kFinalizeColumns == 32, "a warp's lanes are the columns");
  Value lane = arith::RemUIOp::create(b, loc, tid, index(32));
  Value slice = arith::DivUIOp::create(b, loc, tid, index(32));
  Value col = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bid, index(kFinalizeColumns)),
      lane);
  sumPartials(col, lane, slice);
  Value firstWarp =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, slice, index(0));
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [number, result] : llvm::enumerate(returnOp.getOperands())) {
    ValueKind kind = model.kindOf(result);
    if (kind != ValueKind::AcrossRows && kind != ValueKind::Column)
      continue;
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, col,
                                         widthOf(result));
    auto saved = elementMemo;
    emitIf(andOf(firstWarp, inside), [&, number = number, result = result] {
      memref::StoreOp::create(b, loc, elementAt(result, col),
                              resultPointers[number], ValueRange{col});
    });
    elementMemo = std::move(saved);
  }
}
