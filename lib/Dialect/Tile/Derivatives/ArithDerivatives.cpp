//===- ArithDerivatives.cpp - reverse-mode rules for arith ops -----------===//
//
// `g` is the cotangent of the result `r`; each rule appends the cotangent of
// every operand in order. Comparisons are piecewise constant and pass no
// cotangent; max/min route it to the operand that was chosen (the first one
// on a tie), select to the branch that was taken.
//
// The rules are `static` functions of namespace mlir::tile so that
// RuleModel<OpTy> finds them by argument-dependent lookup on AdjointBuilder.
//
//===----------------------------------------------------------------------===//

#include "RuleModel.h"
#include "tile/Dialect/Tile/Derivatives/Derivatives.h"

#include "mlir/IR/DialectRegistry.h"

namespace mlir::tile {
using detail::Cotangents;
using P = arith::CmpFPredicate;

static void adjoint(AdjointBuilder &, arith::AddFOp, Value g, Cotangents &out) {
  out.append({g, g});
}

static void adjoint(AdjointBuilder &b, arith::SubFOp, Value g,
                    Cotangents &out) {
  out.append({g, b.neg(g)});
}

static void adjoint(AdjointBuilder &b, arith::MulFOp op, Value g,
                    Cotangents &out) {
  out.append({b.mul(g, op.getRhs()), b.mul(g, op.getLhs())});
}

static void adjoint(AdjointBuilder &b, arith::DivFOp op, Value g,
                    Cotangents &out) {
  // r = a/b: da = g/b, db = −g·a/b² = −da·r.
  Value da = b.div(g, op.getRhs());
  out.append({da, b.neg(b.mul(da, op.getResult()))});
}

static void adjoint(AdjointBuilder &b, arith::NegFOp, Value g,
                    Cotangents &out) {
  out.push_back(b.neg(g));
}

/// da = g where `lhsChosen`, db = g elsewhere.
static void route(AdjointBuilder &b, Value lhsChosen, Value g,
                  Cotangents &out) {
  out.append(
      {b.where(lhsChosen, g), b.select(lhsChosen, b.constantLike(0.0, g), g)});
}

static void adjoint(AdjointBuilder &b, arith::MaximumFOp op, Value g,
                    Cotangents &out) {
  route(b, b.cmp(P::OGE, op.getLhs(), op.getRhs()), g, out);
}

static void adjoint(AdjointBuilder &b, arith::MaxNumFOp op, Value g,
                    Cotangents &out) {
  route(b, b.cmp(P::OGE, op.getLhs(), op.getRhs()), g, out);
}

static void adjoint(AdjointBuilder &b, arith::MinimumFOp op, Value g,
                    Cotangents &out) {
  route(b, b.cmp(P::OLE, op.getLhs(), op.getRhs()), g, out);
}

static void adjoint(AdjointBuilder &b, arith::MinNumFOp op, Value g,
                    Cotangents &out) {
  route(b, b.cmp(P::OLE, op.getLhs(), op.getRhs()), g, out);
}

static void adjoint(AdjointBuilder &b, arith::SelectOp op, Value g,
                    Cotangents &out) {
  out.push_back(Value()); // the condition
  route(b, op.getCondition(), g, out);
}

static void adjoint(AdjointBuilder &, arith::CmpFOp, Value, Cotangents &out) {
  out.append({Value(), Value()});
}

// Row-shift rules (RowShift.h). A comparison and a select's condition pass
// no cotangent, so a change of what they compare does not count.

static RowShift rowShift(arith::AddFOp, ArrayRef<RowShift> s) {
  return RowShift::add(s[0], s[1]);
}

static RowShift rowShift(arith::SubFOp, ArrayRef<RowShift> s) {
  return RowShift::sub(s[0], s[1]);
}

static RowShift rowShift(arith::MulFOp, ArrayRef<RowShift> s) {
  return RowShift::mul(s[0], s[1]);
}

static RowShift rowShift(arith::DivFOp, ArrayRef<RowShift> s) {
  return RowShift::div(s[0], s[1]);
}

static RowShift rowShift(arith::NegFOp, ArrayRef<RowShift> s) {
  return RowShift::neg(s[0]);
}

// The larger (smaller) of two values moved alike moves with them: a shift
// or a positive scale keeps their order.
static RowShift rowShift(arith::MaximumFOp, ArrayRef<RowShift> s) {
  return RowShift::same(s);
}

static RowShift rowShift(arith::MaxNumFOp, ArrayRef<RowShift> s) {
  return RowShift::same(s);
}

static RowShift rowShift(arith::MinimumFOp, ArrayRef<RowShift> s) {
  return RowShift::same(s);
}

static RowShift rowShift(arith::MinNumFOp, ArrayRef<RowShift> s) {
  return RowShift::same(s);
}

static RowShift rowShift(arith::SelectOp, ArrayRef<RowShift> s) {
  return RowShift::same(s.drop_front());
}

static RowShift rowShift(arith::CmpFOp, ArrayRef<RowShift>) {
  return RowShift::none();
}

void detail::registerArithDerivativeModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, arith::ArithDialect *) {
  // Every differentiable arith op of KernelOps.def; one without an
  // adjoint() above does not compile.
#define TILE_ARITH_DIFFERENTIABLE(Name)                                        \
  detail::attachRule<arith::Name>(context);
#include "tile/Dialect/Tile/IR/KernelOps.def"
  });
}

void registerDerivativeModels(DialectRegistry &registry) {
  detail::registerArithDerivativeModels(registry);
  detail::registerMathDerivativeModels(registry);
}

} // namespace mlir::tile
