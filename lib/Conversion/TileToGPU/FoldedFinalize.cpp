//===- FoldedFinalize.cpp - the finalize in the row kernel's last CTAs ---===//
//
// Where the plan folds the finalize into the row kernel
// (KernelPlan::foldedFinalize: only under `finalize = "folded"`, which is
// not the default, since on an H100 it was 0.1-7 % slower than the separate
// finalize kernel; docs/Performance.md), the row kernel ends here. Each CTA,
// once its partial rows are written, takes a ticket from the arrivals counter.
// The last F CTAs to arrive (F: the finalize's 32-column slices, at least
// one, at most the grid) wait until every CTA has; CTA j of them sums slices j,
// j + F, ... exactly as the separate finalize kernel does (FinalizeKernel.cpp:
// the partial rows in CTA order, so dW is the same on every run).
//
// Why the wait cannot hang: the row kernel is launched cooperatively, so the
// whole grid is resident and every CTA that has not arrived is running.
//
// Why the counter needs no memset per launch: the launcher allocates it
// zeroed, and every launch leaves it zero. Each waiting CTA takes a second
// ticket once it has seen every arrival; the one that takes the last resets
// the counter, when all the others have stopped reading it.
//
// The memory ordering is cooperative groups' grid barrier: every thread's
// stores, a CTA barrier, then thread 0's fence and atomic increment; on the
// waiting side, thread 0's atomic reads, a fence, and a CTA barrier before
// any thread loads a partial.
//
//===----------------------------------------------------------------------===//

#include "FoldedFinalize.h"
#include "FinalizeKernel.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

namespace {
/// Thread 0's atomic `kind` of `value` on the arrivals counter; the old
/// value, as an index.
Value atomicOnCounter(KernelFrame &f, arith::AtomicRMWKind kind,
                      int64_t value) {
  OpBuilder &b = f.b;
  Value operand = arith::ConstantIntOp::create(b, f.loc, value, 32);
  Value old = memref::AtomicRMWOp::create(b, f.loc, kind, operand, f.arrivals,
                                          ValueRange{f.index(0)});
  return arith::IndexCastUIOp::create(b, f.loc, b.getIndexType(), old);
}

/// Thread 0 makes the CTA's stores visible to the GPU and takes a ticket;
/// every thread gets it (through shared memory, which it then frees).
Value takeTicket(KernelFrame &f, Value threadZero) {
  OpBuilder &b = f.b;
  Location loc = f.loc;
  gpu::BarrierOp::create(b, loc);
  f.emitIf(threadZero, [&] {
    NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
    Value ticket = atomicOnCounter(f, arith::AtomicRMWKind::addi, 1);
    memref::StoreOp::create(b, loc, f.indexToF32(ticket), f.shared,
                            ValueRange{f.index(0)});
  });
  gpu::BarrierOp::create(b, loc);
  Value ticket = memref::LoadOp::create(b, loc, f.shared, f.index(0));
  // The finalize's exchange may overwrite the slot once all have read it.
  gpu::BarrierOp::create(b, loc);
  // Tickets are below the grid size, exact in f32.
  return arith::IndexCastUIOp::create(
      b, loc, b.getIndexType(),
      arith::FPToUIOp::create(b, loc, b.getI32Type(), ticket));
}

/// Thread 0 waits until all `grid` CTAs have arrived, then takes its second
/// ticket; the last of the `finalizers` to take one resets the counter.
void waitForArrivals(KernelFrame &f, Value threadZero, Value finalizers) {
  OpBuilder &b = f.b;
  Location loc = f.loc;
  f.emitIf(threadZero, [&] {
    auto wait = scf::WhileOp::create(b, loc, TypeRange{}, ValueRange{});
    {
      OpBuilder::InsertionGuard guard(b);
      Block *before = b.createBlock(&wait.getBefore());
      b.setInsertionPointToStart(before);
      Value arrived = atomicOnCounter(f, arith::AtomicRMWKind::ori, 0);
      Value waiting = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            arrived, f.grid);
      scf::ConditionOp::create(b, loc, waiting, ValueRange{});
      Block *after = b.createBlock(&wait.getAfter());
      b.setInsertionPointToStart(after);
      scf::YieldOp::create(b, loc);
    }
    NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
    Value second = atomicOnCounter(f, arith::AtomicRMWKind::addi, 1);
    Value last = arith::SubIOp::create(
        b, loc, arith::AddIOp::create(b, loc, f.grid, finalizers), f.index(1));
    f.emitIf(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, second, last),
        [&] { atomicOnCounter(f, arith::AtomicRMWKind::assign, 0); });
  });
  gpu::BarrierOp::create(b, loc);
}
} // namespace

void gpu_lowering::emitFoldedFinalize(const KernelFrame &rows) {
  KernelFrame f = rows;
  f.mode = Mode::Finalize;
  f.aligned = Value();
  OpBuilder &b = f.b;
  Location loc = f.loc;
  Value threadZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           f.tid, f.index(0));
  Value ticket = takeTicket(f, threadZero);

  // The columns the finalize covers: the widest of its results.
  Evaluator ev(f);
  (void)ev.evaluateUniforms(); // it succeeded for the row body
  auto returnOp = f.returnOp();
  Value columns;
  for (unsigned number : f.plan.finalizeOutputs) {
    Value width = ev.widthOf(returnOp.getOperand(number));
    columns = columns ? arith::MaxUIOp::create(b, loc, columns, width) : width;
  }
  Value slices =
      arith::CeilDivUIOp::create(b, loc, columns, f.index(kFinalizeColumns));
  // At least one, which resets the counter (no columns: no slices).
  Value finalizers = arith::MinUIOp::create(
      b, loc, arith::MaxUIOp::create(b, loc, slices, f.index(1)), f.grid);
  Value firstFinalizer = arith::SubIOp::create(b, loc, f.grid, finalizers);
  Value finalizes = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                          ticket, firstFinalizer);
  f.emitIf(finalizes, [&] {
    waitForArrivals(f, threadZero, finalizers);
    Value first = arith::SubIOp::create(b, loc, ticket, firstFinalizer);
    auto loop = scf::ForOp::create(b, loc, first, slices, finalizers);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Evaluator::MemoScope scope(ev);
    f.bid = loop.getInductionVar();
    emitFinalizeBody(f, ev);
  });
}
