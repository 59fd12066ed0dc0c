//===- ColumnTests.cpp - a per-row label's column, tested and picked -----===//
//
// The PointEmitter's handling of iota == broadcast(L), the one-hot test of a
// loss with integer labels: a row sum of select(test, x, 0) reads the one
// element at column L (a pick), and the test itself, where it is needed
// per element (the one-hot term of the backward), compares integers.
//
//===----------------------------------------------------------------------===//

#include "PointEmitter.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

namespace {
/// A column test: iota == broadcast(L) (or !=) for a per-row L, such as
/// a label. Its per-row side, before the broadcast, and the iota.
struct ColumnTest {
  Value label;
  IotaOp iota;
  bool equal;
};

std::optional<ColumnTest> matchColumnTest(arith::CmpFOp test,
                                          const KernelModel &model) {
  if (!test)
    return std::nullopt;
  // iota is never NaN: oeq and ueq agree, and so do one and une.
  arith::CmpFPredicate predicate = test.getPredicate();
  bool equal = predicate == arith::CmpFPredicate::OEQ;
  if (!equal && predicate != arith::CmpFPredicate::UNE)
    return std::nullopt;
  Value lhs = test.getLhs(), rhs = test.getRhs();
  if (!lhs.getDefiningOp<IotaOp>())
    std::swap(lhs, rhs);
  auto iota = lhs.getDefiningOp<IotaOp>();
  auto broadcast = rhs.getDefiningOp<BroadcastOp>();
  if (!iota || !broadcast ||
      model.kindOf(broadcast.getInput()) != ValueKind::RowValue)
    return std::nullopt;
  return ColumnTest{broadcast.getInput(), iota, equal};
}

/// The parts of a pick (PointEmitter::isPick): the select's column test and
/// the picked value.
struct Pick {
  ColumnTest test;
  Value picked;
};

std::optional<Pick> matchPick(ReduceOp reduce, const KernelModel &model) {
  if (reduce.getKind() != ReductionKind::Sum || reduce.getInit())
    return std::nullopt;
  auto select = reduce.getInput().getDefiningOp<arith::SelectOp>();
  if (!select)
    return std::nullopt;
  auto splat = select.getFalseValue().getDefiningOp<SplatOp>();
  FloatAttr zero;
  if (!splat || !matchPattern(splat.getValue(), m_Constant(&zero)) ||
      !zero.getValue().isPosZero())
    return std::nullopt;
  std::optional<ColumnTest> test = matchColumnTest(
      select.getCondition().getDefiningOp<arith::CmpFOp>(), model);
  if (!test || !test->equal)
    return std::nullopt;
  return Pick{*test, select.getTrueValue()};
}
} // namespace

bool PointEmitter::isPick(ReduceOp reduce) {
  return matchPick(reduce, f.model).has_value();
}

std::pair<Value, Value> PointEmitter::labelColumn(Value label, Value width) {
  // Only a whole number in [0, width) names a column (NaN does not).
  Value whole = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, label,
                                      math::FloorOp::create(b, loc, label));
  Value low = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, label,
                                    f.f32(0.0));
  Value high = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, label,
                                     f.indexToF32(width));
  Value inRange = arith::AndIOp::create(
      b, loc, whole, arith::AndIOp::create(b, loc, low, high));
  Value safe = arith::SelectOp::create(b, loc, inRange, label, f.f32(0.0));
  Value column = arith::IndexCastUIOp::create(
      b, loc, b.getIndexType(),
      arith::FPToUIOp::create(b, loc, b.getI64Type(), safe));
  return {inRange, column};
}

bool PointEmitter::isColumnTest(arith::CmpFOp test) {
  return matchColumnTest(test, f.model).has_value();
}

Lanes PointEmitter::columnTest(arith::CmpFOp test, Value base) {
  ColumnTest parts = *matchColumnTest(test, f.model);
  auto [inRange, column] =
      labelColumn(rowValue(parts.label), widthOf(parts.iota.getResult()));
  // Integers, not f32: each lane's column as f32 cost a 64-bit integer
  // conversion (a quarter-rate I2F) per element of cross-entropy's
  // backward, and rounds past 2^24 columns, where the float64 reference
  // does not. The difference to `base` is taken once per group; a label
  // naming no column is moved past every lane.
  Value offset = arith::SelectOp::create(
      b, loc, inRange, arith::SubIOp::create(b, loc, column, base),
      f.index(-1));
  auto predicate =
      parts.equal ? arith::CmpIPredicate::eq : arith::CmpIPredicate::ne;
  Lanes result;
  for (int64_t l = 0; l < laneCount; ++l)
    result.push_back(
        arith::CmpIOp::create(b, loc, predicate, offset, f.index(l)));
  return result;
}

Value PointEmitter::pickRow(ReduceOp reduce) {
  Pick pick = *matchPick(reduce, f.model);
  Type f32Type = b.getF32Type();
  // The sum of selects is 0 for a label that names no column.
  auto [inRange, column] =
      labelColumn(rowValue(pick.test.label), widthOf(reduce.getInput()));
  Value element;
  {
    // One column, scalar; what it evaluates is forgotten after.
    MemoScope scope(*this);
    llvm::SaveAndRestore<int64_t> scalar(laneCount, 1);
    element = group(pick.picked, column)[0];
  }
  if (element.getType() != f32Type)
    element = convert(element, f32Type);
  return arith::SelectOp::create(b, loc, inRange, element, f.f32(0.0));
}
