//===- MathDerivatives.cpp - reverse-mode rules for math ops -------------===//
//
// `g` is the cotangent of the result `r = f(a)`. Where f' is cheapest from
// the result (exp, sqrt, rsqrt, tanh) the rule reads the recomputed result;
// otherwise it reads the operand. Rounding ops (floor, ceil) are piecewise
// constant and pass no cotangent.
//
//===----------------------------------------------------------------------===//

#include "RuleModel.h"
#include "tile/Dialect/Tile/Derivatives/Derivatives.h"

#include "mlir/IR/DialectRegistry.h"

namespace mlir::tile {
using detail::Cotangents;

static constexpr double kLn2 = 0.69314718055994530942;
static constexpr double kLn10 = 2.30258509299404568402;
static constexpr double kTwoOverSqrtPi = 1.12837916709551257390;

static void adjoint(AdjointBuilder &b, math::ExpOp op, Value g,
                    Cotangents &out) {
  out.push_back(b.mul(g, op.getResult()));
}

static void adjoint(AdjointBuilder &b, math::Exp2Op op, Value g,
                    Cotangents &out) {
  out.push_back(b.scale(b.mul(g, op.getResult()), kLn2));
}

static void adjoint(AdjointBuilder &b, math::ExpM1Op op, Value g,
                    Cotangents &out) {
  Value r = op.getResult();
  out.push_back(b.mul(g, b.add(r, b.constantLike(1.0, r))));
}

static void adjoint(AdjointBuilder &b, math::LogOp op, Value g,
                    Cotangents &out) {
  out.push_back(b.div(g, op.getOperand()));
}

static void adjoint(AdjointBuilder &b, math::Log2Op op, Value g,
                    Cotangents &out) {
  out.push_back(b.div(g, b.scale(op.getOperand(), kLn2)));
}

static void adjoint(AdjointBuilder &b, math::Log10Op op, Value g,
                    Cotangents &out) {
  out.push_back(b.div(g, b.scale(op.getOperand(), kLn10)));
}

static void adjoint(AdjointBuilder &b, math::Log1pOp op, Value g,
                    Cotangents &out) {
  Value a = op.getOperand();
  out.push_back(b.div(g, b.add(a, b.constantLike(1.0, a))));
}

static void adjoint(AdjointBuilder &b, math::SqrtOp op, Value g,
                    Cotangents &out) {
  // d√a = 1/(2√a).
  out.push_back(b.div(b.scale(g, 0.5), op.getResult()));
}

static void adjoint(AdjointBuilder &b, math::RsqrtOp op, Value g,
                    Cotangents &out) {
  // d a^(-1/2) = −½·a^(-3/2) = −½·r³: no division.
  Value r = op.getResult();
  out.push_back(b.mul(b.scale(g, -0.5), b.mul(r, b.mul(r, r))));
}

static void adjoint(AdjointBuilder &b, math::TanhOp op, Value g,
                    Cotangents &out) {
  Value r = op.getResult();
  out.push_back(b.mul(g, b.sub(b.constantLike(1.0, r), b.mul(r, r))));
}

static void adjoint(AdjointBuilder &b, math::ErfOp op, Value g,
                    Cotangents &out) {
  // erf'(a) = 2/√π · exp(−a²).
  Value a = op.getOperand();
  Value gauss =
      math::ExpOp::create(b.getBuilder(), b.getLoc(), b.neg(b.mul(a, a)));
  out.push_back(b.mul(b.scale(g, kTwoOverSqrtPi), gauss));
}

static void adjoint(AdjointBuilder &b, math::SinOp op, Value g,
                    Cotangents &out) {
  out.push_back(b.mul(
      g, math::CosOp::create(b.getBuilder(), b.getLoc(), op.getOperand())));
}

static void adjoint(AdjointBuilder &b, math::CosOp op, Value g,
                    Cotangents &out) {
  out.push_back(b.neg(b.mul(
      g, math::SinOp::create(b.getBuilder(), b.getLoc(), op.getOperand()))));
}

static void adjoint(AdjointBuilder &b, math::AbsFOp op, Value g,
                    Cotangents &out) {
  Value a = op.getOperand();
  Value negative = b.cmp(arith::CmpFPredicate::OLT, a, b.constantLike(0.0, a));
  out.push_back(b.select(negative, b.neg(g), g));
}

static void adjoint(AdjointBuilder &, math::FloorOp, Value, Cotangents &out) {
  out.push_back(Value());
}

static void adjoint(AdjointBuilder &, math::CeilOp, Value, Cotangents &out) {
  out.push_back(Value());
}

static void adjoint(AdjointBuilder &b, math::PowFOp op, Value g,
                    Cotangents &out) {
  // r = a^e: da = g·e·a^(e−1) (defined at a = 0, unlike g·e·r/a),
  // de = g·r·ln a.
  Value a = op.getLhs(), e = op.getRhs();
  Value aToEMinus1 = math::PowFOp::create(b.getBuilder(), b.getLoc(), a,
                                          b.sub(e, b.constantLike(1.0, e)));
  Value logA = math::LogOp::create(b.getBuilder(), b.getLoc(), a);
  out.append(
      {b.mul(g, b.mul(e, aToEMinus1)), b.mul(g, b.mul(op.getResult(), logA))});
}

static void adjoint(AdjointBuilder &b, math::FmaOp op, Value g,
                    Cotangents &out) {
  out.append({b.mul(g, op.getB()), b.mul(g, op.getA()), g});
}

// Row-shift rules (RowShift.h): the ones that keep a coefficient dyadic
// (exact in a double). exp2 and log2 would scale it by ln 2, and a
// cancellation would then rest on rounding; they and the rest are opaque.

static RowShift rowShift(math::ExpOp, ArrayRef<RowShift> s) {
  return RowShift::exp(s[0]);
}

static RowShift rowShift(math::LogOp, ArrayRef<RowShift> s) {
  return RowShift::log(s[0]);
}

static RowShift rowShift(math::SqrtOp, ArrayRef<RowShift> s) {
  return RowShift::pow(s[0], 0.5);
}

static RowShift rowShift(math::RsqrtOp, ArrayRef<RowShift> s) {
  return RowShift::pow(s[0], -0.5);
}

static RowShift rowShift(math::AbsFOp, ArrayRef<RowShift> s) {
  // |a·k| = |a|·k for k > 0.
  return RowShift::pow(s[0], 1.0);
}

static RowShift rowShift(math::FloorOp, ArrayRef<RowShift>) {
  return RowShift::none();
}

static RowShift rowShift(math::CeilOp, ArrayRef<RowShift>) {
  return RowShift::none();
}

void detail::registerMathDerivativeModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, math::MathDialect *) {
  // Every math op of KernelOps.def; one without an adjoint() above does
  // not compile.
#define TILE_MATH_DIFFERENTIABLE(Name) detail::attachRule<math::Name>(context);
#include "tile/Dialect/Tile/IR/KernelOps.def"
  });
}

} // namespace mlir::tile
