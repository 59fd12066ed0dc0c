//===- RowShift.h - how a per-row change moves through an op ----*- C++ -*-===//
//
// A softmax subtracts its row's maximum m for stability and is exactly
// invariant to m: y = exp(x - m) / Σ exp(x - m) does not change when m
// does. The reverse sweep does not know that; it derives m's cotangent
// (which cancels to rounding noise) and routes it to the tied maxima,
// two more row reductions and a compare per element for a zero.
//
// RowShift is the first-order change of a value when a per-row value m
// moves by δ (each row by its own δ), in the few forms that cancel
// exactly:
//
//   none        the value does not change
//   offset(c)   it moves by c·δ           (x - m: offset(-1))
//   factor(c)   it moves by c·δ·value, as if multiplied by exp(c·δ)
//                                         (exp(x - m): factor(-1))
//   unknown     anything else
//
// none is offset(0) and factor(0). Every c the rules make is dyadic (a
// sum of powers of two: ±1s, and a halving per square root), exact
// in a double, so a difference that cancels is exactly 0. Each op states its
// rule next to its derivative (DifferentiableOpInterface::propagateRowShift);
// the differentiator treats a row statistic whose change reaches no result as a
// constant.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_IR_ROWSHIFT_H
#define TILE_DIALECT_TILE_IR_ROWSHIFT_H

#include "llvm/ADT/ArrayRef.h"

namespace mlir::tile {

class RowShift {
public:
  enum class Kind { None, Offset, Factor, Unknown };

  static RowShift none() { return {Kind::None, 0.0}; }
  static RowShift offset(double c) {
    return c == 0.0 ? none() : RowShift(Kind::Offset, c);
  }
  static RowShift factor(double c) {
    return c == 0.0 ? none() : RowShift(Kind::Factor, c);
  }
  static RowShift unknown() { return {Kind::Unknown, 0.0}; }
  /// What an op with no rule of its own gives: none where nothing it reads
  /// changes, unknown otherwise.
  static RowShift opaque(llvm::ArrayRef<RowShift> operands);
  /// The operands' common change where they all have the same one (a
  /// concat, a select's branches, an elementwise max), unknown otherwise.
  static RowShift same(llvm::ArrayRef<RowShift> operands);

  /// The rules of arithmetic on changes; each is unknown where the result
  /// has none of the three forms.
  static RowShift add(RowShift a, RowShift b);
  static RowShift sub(RowShift a, RowShift b) { return add(a, neg(b)); }
  static RowShift mul(RowShift a, RowShift b);
  static RowShift div(RowShift a, RowShift b);
  static RowShift neg(RowShift a);
  /// exp of an offset(c) value is a factor(c) one; log the other way.
  static RowShift exp(RowShift a);
  static RowShift log(RowShift a);
  /// a^p for a factor(c) value is a factor(p·c) one (p a half or whole).
  static RowShift pow(RowShift a, double p);

  Kind getKind() const { return kind; }
  double getCoefficient() const { return coefficient; }
  bool isNone() const { return kind == Kind::None; }
  bool isUnknown() const { return kind == Kind::Unknown; }
  bool operator==(const RowShift &other) const {
    return kind == other.kind && coefficient == other.coefficient;
  }

private:
  RowShift(Kind kind, double coefficient)
      : kind(kind), coefficient(coefficient) {}
  /// Whether this is an offset, counting none as offset(0); likewise factor.
  bool isOffsetLike() const {
    return kind == Kind::None || kind == Kind::Offset;
  }
  bool isFactorLike() const {
    return kind == Kind::None || kind == Kind::Factor;
  }

  Kind kind;
  double coefficient;
};

} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_IR_ROWSHIFT_H
