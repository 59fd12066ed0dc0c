//===- RowExchange.cpp - row reductions through shared memory ------------===//

#include "RowExchange.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

SmallVector<Value> RowExchange::reduce(ArrayRef<ReductionKind> kinds,
                                       SmallVector<Value> values) {
  assert(values.size() <= static_cast<size_t>(kMaxFusedReductions));
  assert(rowParity && "an exchange outside the row loop");
  OpBuilder &b = f.b;
  Location loc = f.loc;
  // A group of at most a warp (rows per CTA splitting it into aligned
  // lanes, a power of two of them) is done after its xor shuffles: every
  // lane holds the total, in the same order on every lane. No shared
  // memory, no barrier: the groups run independently.
  int64_t group = f.schedule.threads / f.schedule.rowsPerCta;
  int32_t lanes = static_cast<int32_t>(std::min<int64_t>(group, 32));
  for (int32_t offset = lanes / 2; offset >= 1; offset /= 2)
    for (auto [kind, value] : llvm::zip(kinds, values)) {
      Value other = gpu::ShuffleOp::create(b, loc, value, offset, 32,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      value = f.combine(kind, value, other);
    }
  if (group <= 32)
    return values;
  int64_t ctaWarps = f.schedule.threads / 32;
  Value parity = exchanges++ % 2 == 0
                     ? rowParity
                     : arith::XOrIOp::create(b, loc, rowParity, f.index(1));
  Value set = arith::MulIOp::create(b, loc, parity,
                                    f.index(kMaxFusedReductions * ctaWarps));
  Value lane = arith::RemUIOp::create(b, loc, f.tid, f.index(32));
  Value warp = arith::DivUIOp::create(b, loc, f.tid, f.index(32));
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, f.index(0));
  auto store = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    for (auto [j, value] : llvm::enumerate(values)) {
      Value at = arith::AddIOp::create(
          b, loc, arith::AddIOp::create(b, loc, set, warp),
          f.index(static_cast<int64_t>(j) * ctaWarps));
      memref::StoreOp::create(b, loc, value, f.shared, ValueRange{at});
    }
  }
  gpu::BarrierOp::create(b, loc);
  // The warps of this row's group: all of them with one row per CTA.
  int64_t warps = ctaWarps / f.schedule.rowsPerCta;
  Value groupWarps =
      f.schedule.rowsPerCta == 1
          ? set
          : arith::AddIOp::create(
                b, loc, set,
                arith::MulIOp::create(b, loc, f.rowGroup, f.index(warps)));
  SmallVector<Value> totals;
  for (auto [j, kind] : llvm::enumerate(kinds)) {
    auto slot = [&, j = j](int64_t w) -> Value {
      return arith::AddIOp::create(
          b, loc, groupWarps, f.index(static_cast<int64_t>(j) * ctaWarps + w));
    };
    Value total = memref::LoadOp::create(b, loc, f.shared, ValueRange{slot(0)});
    for (int64_t w = 1; w < warps; ++w)
      total = f.combine(
          kind, total,
          memref::LoadOp::create(b, loc, f.shared, ValueRange{slot(w)}));
    totals.push_back(total);
  }
  return totals;
}

Value RowExchange::finishRow() {
  // After an odd count the next row starts on the other set. (With an even
  // count the parity stays 0, and the set offsets fold to constants.)
  Value next = exchanges % 2 == 0
                   ? rowParity
                   : arith::XOrIOp::create(f.b, f.loc, rowParity, f.index(1));
  exchanges = 0;
  rowParity = Value();
  return next;
}
