//===- RowShift.cpp - arithmetic on first-order per-row changes ----------===//
//
// With d the change of a value and δ its row's shift: (a + b)' = a' + b',
// (a·b)' = a'·b + a·b', (a / b)' = a'/b - a·b'/b². An offset(c) value has
// a' = c·δ, a factor(c) one a' = c·δ·a, and each rule below keeps the
// result in one of those forms only where the formula does.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/RowShift.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir::tile;

RowShift RowShift::opaque(llvm::ArrayRef<RowShift> operands) {
  return llvm::all_of(operands, [](RowShift s) { return s.isNone(); })
             ? none()
             : unknown();
}

RowShift RowShift::same(llvm::ArrayRef<RowShift> operands) {
  if (operands.empty())
    return none();
  return llvm::all_equal(operands) ? operands.front() : unknown();
}

RowShift RowShift::add(RowShift a, RowShift b) {
  // c·δ + d·δ; and c·δ·a + c·δ·b = c·δ·(a + b) for one factor only.
  if (a.isOffsetLike() && b.isOffsetLike())
    return offset(a.coefficient + b.coefficient);
  if (a.kind == Kind::Factor && a == b)
    return a;
  return unknown();
}

RowShift RowShift::mul(RowShift a, RowShift b) {
  // c·δ·a·b + d·δ·a·b = (c + d)·δ·(a·b).
  if (a.isFactorLike() && b.isFactorLike())
    return factor(a.coefficient + b.coefficient);
  return unknown();
}

RowShift RowShift::div(RowShift a, RowShift b) {
  // (c·δ·a)/b - a·(d·δ·b)/b² = (c - d)·δ·(a / b).
  if (a.isFactorLike() && b.isFactorLike())
    return factor(a.coefficient - b.coefficient);
  return unknown();
}

RowShift RowShift::neg(RowShift a) {
  // -(a + c·δ) = -a - c·δ; -(a·k) = (-a)·k.
  return a.kind == Kind::Offset ? offset(-a.coefficient) : a;
}

RowShift RowShift::exp(RowShift a) {
  // exp(a + c·δ) = exp(a)·exp(c·δ).
  return a.isOffsetLike() ? factor(a.coefficient) : unknown();
}

RowShift RowShift::log(RowShift a) {
  // log(a·exp(c·δ)) = log(a) + c·δ.
  return a.isFactorLike() ? offset(a.coefficient) : unknown();
}

RowShift RowShift::pow(RowShift a, double p) {
  // (a·exp(c·δ))^p = a^p·exp(p·c·δ).
  return a.isFactorLike() ? factor(p * a.coefficient) : unknown();
}
