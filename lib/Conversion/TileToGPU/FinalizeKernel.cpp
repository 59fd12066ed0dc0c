//===- FinalizeKernel.cpp - the finalize kernel's body -------------------===//
//
// The finalize sums the CTAs' partial rows of each cross-row reduction: a
// CTA takes kFinalizeColumns columns and its warps split the rows, up to
// KernelPlan::finalizeUnroll rows a step; the warps' sums are added in warp
// order, so the result is the same on every run.
//
//===----------------------------------------------------------------------===//

#include "FinalizeKernel.h"
#include "BodyEmitter.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

namespace {
class FinalizeKernel : public BodyEmitter {
public:
  using BodyEmitter::BodyEmitter;
  void emit();

private:
  /// Sums, cooperatively over the whole CTA, every cross-row reduction's
  /// partial rows at this thread's column, and gives the totals to the
  /// points.
  void sumPartials(Value col, Value lane, Value slice);
  /// This warp's sum of its share of `reduce`'s partial rows at `column`.
  Value sumWarpRows(ReduceOp reduce, Value width, Value column, Value slice);
};
} // namespace

Value FinalizeKernel::sumWarpRows(ReduceOp reduce, Value width, Value column,
                                  Value slice) {
  // Warp w adds partial rows w, w + warps, ... in order, `unroll` rows a
  // step: their loads first (rows past the last load the last and are not
  // added), then the sums in row order.
  int64_t warps = f.schedule.threads / 32;
  int64_t unroll = f.plan.finalizeUnroll;
  Value init = f.identity(reduce.getKind(), b.getF32Type());
  Value lastRow = arith::SubIOp::create(b, loc, f.ctas, f.index(1));
  auto loop = scf::ForOp::create(b, loc, slice, f.ctas, f.index(warps * unroll),
                                 ValueRange{init});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<std::pair<Value, Value>> loaded; // exists, partial
  for (int64_t u = 0; u < unroll; ++u) {
    Value partialRow = arith::AddIOp::create(b, loc, loop.getInductionVar(),
                                             f.index(u * warps));
    Value exists = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         partialRow, f.ctas);
    partialRow = arith::MinUIOp::create(b, loc, partialRow, lastRow);
    Value offset = f.workspaceAt(f.workspaceBase.lookup(reduce), partialRow,
                                 width, column);
    loaded.push_back(
        {u == 0 ? Value() : exists,
         memref::LoadOp::create(b, loc, f.workspace, ValueRange{offset})});
  }
  Value sum = loop.getRegionIterArg(0);
  for (auto [exists, partial] : loaded) {
    Value added = f.combine(reduce.getKind(), sum, partial);
    sum = exists ? arith::SelectOp::create(b, loc, exists, added, sum) : added;
  }
  scf::YieldOp::create(b, loc, sum);
  return loop.getResult(0);
}

void FinalizeKernel::sumPartials(Value col, Value lane, Value slice) {
  int64_t warps = f.schedule.threads / 32;
  for (ReduceOp reduce : f.model.acrossRowReductions) {
    Value width = ev.widthOf(reduce);
    // Threads past the last column load a column that exists (or element
    // 0 of a workspace with none) and store nothing.
    Value last = arith::SubIOp::create(
        b, loc, arith::MaxUIOp::create(b, loc, width, f.index(1)), f.index(1));
    Value column = arith::MinUIOp::create(b, loc, col, last);
    Value warpSum = sumWarpRows(reduce, width, column, slice);
    memref::StoreOp::create(b, loc, warpSum, f.shared, ValueRange{f.tid});
    gpu::BarrierOp::create(b, loc);
    Value total = memref::LoadOp::create(b, loc, f.shared, ValueRange{lane});
    for (int64_t w = 1; w < warps; ++w) {
      Value slot = arith::AddIOp::create(b, loc, lane, f.index(w * 32));
      total =
          f.combine(reduce.getKind(), total,
                    memref::LoadOp::create(b, loc, f.shared, ValueRange{slot}));
    }
    // The next reduction may overwrite the slots only once all have read.
    gpu::BarrierOp::create(b, loc);
    ev.setAcrossRowsTotal(reduce, total);
  }
}

void FinalizeKernel::emit() {
  // A CTA per kFinalizeColumns columns: lane l of every warp works on
  // column bid * kFinalizeColumns + l; warp 0 writes the results.
  static_assert(kFinalizeColumns == 32, "a warp's lanes are the columns");
  Value lane = arith::RemUIOp::create(b, loc, f.tid, f.index(32));
  Value slice = arith::DivUIOp::create(b, loc, f.tid, f.index(32));
  Value col = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, f.bid, f.index(kFinalizeColumns)),
      lane);
  sumPartials(col, lane, slice);
  Value firstWarp = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          slice, f.index(0));
  func::ReturnOp returnOp = f.returnOp();
  for (unsigned number : f.plan.finalizeOutputs) {
    Value result = returnOp.getOperand(number);
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, col,
                                         ev.widthOf(result));
    PointEmitter::MemoScope scope(ev);
    f.emitIf(f.andOf(firstWarp, inside), [&] {
      memref::StoreOp::create(b, loc, ev.elementAt(result, col),
                              f.resultPointers[number], ValueRange{col});
    });
  }
}

void gpu_lowering::emitFinalizeBody(KernelFrame &frame, PointEmitter &points) {
  FinalizeKernel(frame, points).emit();
}
