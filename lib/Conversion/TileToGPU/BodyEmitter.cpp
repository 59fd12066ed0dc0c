//===- BodyEmitter.cpp - the loops every kernel body is made of ----------===//

#include "BodyEmitter.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

void BodyEmitter::stridedLoop(Value start, Value end, Value stride,
                              function_ref<void(Value)> body) {
  auto loop = scf::ForOp::create(b, loc, start, end, stride);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  PointEmitter::MemoScope scope(ev);
  body(loop.getInductionVar());
}

void BodyEmitter::columnLoop(Value end, function_ref<void(Value)> body) {
  int64_t width = f.schedule.vectorWidth;
  bool rows = f.mode == Mode::Rows;
  Value tail;
  if (width > 1 && rows) {
    Value vector = f.index(width);
    Value groups = arith::DivUIOp::create(b, loc, end, vector);
    auto branch =
        scf::IfOp::create(b, loc, f.aligned, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      auto lanes = ev.withLanes(width);
      stridedLoop(f.member, groups, f.groupSize, [&](Value g) {
        body(arith::MulIOp::create(b, loc, g, vector));
      });
    }
    Value vectorized = arith::MulIOp::create(b, loc, groups, vector);
    tail = arith::SelectOp::create(b, loc, f.aligned, vectorized, f.index(0));
  }
  Value first = rows ? f.member : f.tid;
  Value step = rows ? f.groupSize : f.threads;
  Value start = width > 1 && rows
                    ? Value(arith::AddIOp::create(b, loc, tail, first))
                    : first;
  stridedLoop(start, end, step, body);
}

SmallVector<Value> BodyEmitter::sinkColumns(ArrayRef<KernelPlan::Sink> sinks,
                                            Value col) {
  SmallVector<Value> columns;
  for (const KernelPlan::Sink &sink : sinks) {
    if (!sink.partWidth || sink.part == 0) {
      columns.push_back(col);
      continue;
    }
    Value offset = arith::MulIOp::create(b, loc, ev.widthOf(sink.partWidth),
                                         f.index(sink.part));
    columns.push_back(arith::AddIOp::create(b, loc, offset, col));
  }
  return columns;
}

Value BodyEmitter::sinkAddress(const KernelPlan::Sink &sink, Value loopRowStart,
                               Value column) {
  // A part's row is as wide as its whole result, not as its loop.
  Value rowStart =
      sink.partWidth
          ? arith::MulIOp::create(b, loc, ev.row(), ev.widthOf(sink.value))
          : loopRowStart;
  return arith::AddIOp::create(b, loc, rowStart, column);
}

scf::ForOp BodyEmitter::createRowLoop(ValueRange inits) {
  // Every group takes every step (the barriers of a row reduction need the
  // whole CTA), and a group past the last row computes on the last row but
  // writes nothing.
  int64_t perCta = f.schedule.rowsPerCta;
  Value start = perCta == 1
                    ? f.bid
                    : arith::MulIOp::create(b, loc, f.bid, f.index(perCta));
  Value step = perCta == 1
                   ? f.grid
                   : arith::MulIOp::create(b, loc, f.grid, f.index(perCta));
  SmallVector<Value> carried(inits);
  carried.push_back(f.index(0));
  auto rowLoop = scf::ForOp::create(b, loc, start, f.rows, step, carried);
  b.setInsertionPointToStart(rowLoop.getBody());
  Value row = rowLoop.getInductionVar();
  Value valid;
  if (perCta > 1) {
    Value mine = arith::AddIOp::create(b, loc, row, f.rowGroup);
    valid =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, mine, f.rows);
    Value last = arith::SubIOp::create(b, loc, f.rows, f.index(1));
    row = arith::MinUIOp::create(b, loc, mine, last);
  }
  ev.beginRow(row, valid, rowLoop.getRegionIterArgs().back());
  return rowLoop;
}

void BodyEmitter::prepareRowOutputs() {
  for (const KernelPlan::RowOutput &output : f.plan.rowOutputs)
    ev.prepareRowValues(output.value);
}

void BodyEmitter::storeRowOutputs() {
  if (f.plan.rowOutputs.empty())
    return;
  SmallVector<Value> values;
  for (const KernelPlan::RowOutput &output : f.plan.rowOutputs)
    values.push_back(ev.rowValue(output.value));
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      f.member, f.index(0));
  f.emitIf(f.andOf(first, ev.rowValid()), [&] {
    for (auto [value, output] : llvm::zip(values, f.plan.rowOutputs))
      memref::StoreOp::create(b, loc, value, f.resultPointers[output.result],
                              ValueRange{ev.row()});
  });
}
