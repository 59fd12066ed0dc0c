//===- KernelFrame.cpp - builder helpers of the emitters -----------------===//

#include "KernelFrame.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

Value KernelFrame::identity(ReductionKind kind, Type type) {
  auto floatType = cast<FloatType>(type);
  switch (kind) {
  case ReductionKind::Max:
    return arith::ConstantOp::create(
        b, loc, type,
        b.getFloatAttr(type, APFloat::getInf(floatType.getFloatSemantics(),
                                             /*Negative=*/true)));
  case ReductionKind::Min:
    return arith::ConstantOp::create(
        b, loc, type,
        b.getFloatAttr(type, APFloat::getInf(floatType.getFloatSemantics())));
  default:
    return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, 0.0));
  }
}

Value KernelFrame::combine(ReductionKind kind, Value a, Value c) {
  switch (kind) {
  case ReductionKind::Max:
    return arith::MaximumFOp::create(b, loc, a, c);
  case ReductionKind::Min:
    return arith::MinimumFOp::create(b, loc, a, c);
  default:
    return arith::AddFOp::create(b, loc, a, c);
  }
}

Value KernelFrame::rescaleSum(Value sum, Value from, Value to,
                              arith::FastMathFlags expFlags) {
  Value same =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, from, to);
  Value scale = arith::SelectOp::create(
      b, loc, same, f32(1.0),
      math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, from, to),
                          expFlags));
  return arith::MulFOp::create(b, loc, sum, scale);
}

void KernelFrame::combineInto(ReductionKind kind, Lanes &into,
                              ArrayRef<Value> values) {
  for (auto [sum, value] : llvm::zip(into, values))
    sum = combine(kind, sum, value);
}

Value KernelFrame::andOf(Value a, Value c) {
  if (!a)
    return c;
  if (!c)
    return a;
  return arith::AndIOp::create(b, loc, a, c);
}

Value KernelFrame::indexToF32(Value value) {
  Value asInt = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), value);
  return arith::UIToFPOp::create(b, loc, b.getF32Type(), asInt);
}

Value KernelFrame::workspaceAt(Value base, Value partialRow, Value width,
                               Value col) {
  return arith::AddIOp::create(
      b, loc, base,
      arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, partialRow, width), col));
}

void KernelFrame::emitIf(Value condition, function_ref<void()> body) {
  if (!condition)
    return body();
  auto branch = scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  body();
}
