//===- FoldedFinalize.cpp - the finalize in the row kernel's last CTAs ---===//
//
// Where the plan folds the finalize into the row kernel
// (KernelPlan::foldedFinalize: only under `finalize = "folded"`, which is
// not the default: on an H100 it was 0-7 % slower than the separate
// finalize kernel, with membar.gl and with release/acquire alike;
// docs/Performance.md), the row kernel ends here. Each CTA,
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
// ticket once its finalize is done; the one that takes the last resets the
// counter, when all the others have stopped reading it. The second ticket
// comes after the finalize, not before it: nothing waits on it.
//
// The memory ordering is a release/acquire pair at GPU scope, the lightest
// the PTX memory model allows: every thread's stores, a CTA barrier, then
// thread 0's release fence (fence.acq_rel.gpu) and a relaxed increment; on
// the waiting side thread 0 polls with acquire loads (ld.acquire.gpu), and a
// CTA barrier orders every thread's loads of the partials after it. The
// barriers carry the other threads' stores and loads (PTX's causality order
// is cumulative). These are LLVM-dialect atomics: memref.atomic_rmw has no
// ordering. The release is a fence of its own because LLVM 22's NVPTX back
// end drops the ordering of an atomicrmw (a plain atom.add). Against
// membar.gl and read-modify-write polling this saved little: the tail is a
// chain of dependent L2 round trips either way (docs/Performance.md).
//
//===----------------------------------------------------------------------===//

#include "FoldedFinalize.h"
#include "FinalizeKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

namespace {
constexpr StringLiteral kGpuScope = "device";

/// The arrivals counter as an LLVM pointer, for atomics with a scope and an
/// ordering.
Value counterPointer(KernelFrame &f) {
  OpBuilder &b = f.b;
  Value address =
      memref::ExtractAlignedPointerAsIndexOp::create(b, f.loc, f.arrivals);
  Value word = arith::IndexCastUIOp::create(b, f.loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(
      b, f.loc, LLVM::LLVMPointerType::get(b.getContext()), word);
}

/// Thread 0's relaxed increment of the counter; the old value, as an index.
Value increment(KernelFrame &f, Value counter) {
  OpBuilder &b = f.b;
  Value old = LLVM::AtomicRMWOp::create(
      b, f.loc, LLVM::AtomicBinOp::add, counter,
      arith::ConstantIntOp::create(b, f.loc, 1, 32),
      LLVM::AtomicOrdering::monotonic, kGpuScope, /*alignment=*/4);
  return arith::IndexCastUIOp::create(b, f.loc, b.getIndexType(), old);
}

/// Thread 0 releases the CTA's stores to the GPU and takes a ticket; every
/// thread gets it (through shared memory, which it then frees).
Value takeTicket(KernelFrame &f, Value threadZero, Value counter) {
  OpBuilder &b = f.b;
  Location loc = f.loc;
  gpu::BarrierOp::create(b, loc);
  f.emitIf(threadZero, [&] {
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::release, kGpuScope);
    Value ticket = increment(f, counter);
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

/// Thread 0 polls, with acquire loads, until all `grid` CTAs have arrived;
/// the barrier then orders every thread's loads after its last poll.
void waitForArrivals(KernelFrame &f, Value threadZero, Value counter) {
  OpBuilder &b = f.b;
  Location loc = f.loc;
  f.emitIf(threadZero, [&] {
    auto wait = scf::WhileOp::create(b, loc, TypeRange{}, ValueRange{});
    OpBuilder::InsertionGuard guard(b);
    Block *before = b.createBlock(&wait.getBefore());
    b.setInsertionPointToStart(before);
    Value arrived = LLVM::LoadOp::create(
        b, loc, b.getI32Type(), counter, /*alignment=*/4,
        /*isVolatile=*/false, /*isNonTemporal=*/false, /*isInvariant=*/false,
        /*isInvariantGroup=*/false, LLVM::AtomicOrdering::acquire, kGpuScope);
    Value waiting = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult,
        arith::IndexCastUIOp::create(b, loc, b.getIndexType(), arrived),
        f.grid);
    scf::ConditionOp::create(b, loc, waiting, ValueRange{});
    Block *after = b.createBlock(&wait.getAfter());
    b.setInsertionPointToStart(after);
    scf::YieldOp::create(b, loc);
  });
  gpu::BarrierOp::create(b, loc);
}

/// Thread 0 takes its second ticket; the last of the `finalizers` to take
/// one resets the counter (all the others have stopped reading it).
void leave(KernelFrame &f, Value threadZero, Value counter, Value finalizers) {
  OpBuilder &b = f.b;
  Location loc = f.loc;
  f.emitIf(threadZero, [&] {
    Value second = increment(f, counter);
    Value last = arith::SubIOp::create(
        b, loc, arith::AddIOp::create(b, loc, f.grid, finalizers), f.index(1));
    f.emitIf(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, second, last),
        [&] {
          LLVM::StoreOp::create(b, loc,
                                arith::ConstantIntOp::create(b, loc, 0, 32),
                                counter, /*alignment=*/4, /*isVolatile=*/false,
                                /*isNonTemporal=*/false,
                                /*isInvariantGroup=*/false,
                                LLVM::AtomicOrdering::monotonic, kGpuScope);
        });
  });
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
  Value counter = counterPointer(f);
  Value ticket = takeTicket(f, threadZero, counter);

  // The columns the finalize covers: the widest of its results.
  PointEmitter ev(f);
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
    waitForArrivals(f, threadZero, counter);
    Value first = arith::SubIOp::create(b, loc, ticket, firstFinalizer);
    auto loop = scf::ForOp::create(b, loc, first, slices, finalizers);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      PointEmitter::MemoScope scope(ev);
      f.bid = loop.getInductionVar(); // ev reads the frame's slice from f
      emitFinalizeBody(f, ev);
    }
    leave(f, threadZero, counter, finalizers);
  });
}
