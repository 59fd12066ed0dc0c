//===- AdjointBuilder.h - the vocabulary of derivative rules ----*- C++ -*-===//
//
// Derivative rules are short formulas (`g·b`, `−g·r/b`, `g·r·(1 − r)`). This
// builder spells them in tile IR at one location, so that each rule reads like
// its formula and every rule creates cotangents the same way: f32 tensors of
// the primal value's shape, constants splat `like` a tensor of that shape.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_IR_ADJOINTBUILDER_H
#define TILE_DIALECT_TILE_IR_ADJOINTBUILDER_H

#include "tile/Dialect/Tile/IR/TileDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::tile {

class AdjointBuilder {
public:
  AdjointBuilder(OpBuilder &builder, Location loc)
      : builder(builder), loc(loc) {}

  OpBuilder &getBuilder() { return builder; }
  Location getLoc() const { return loc; }
  void setLoc(Location newLoc) { loc = newLoc; }

  /// The type of the cotangent of a value of type `type`: the same shape
  /// with f32 elements.
  static RankedTensorType cotangentType(Type type);

  // Elementwise f32 arithmetic on equal-typed tensors.
  Value add(Value a, Value b);
  Value sub(Value a, Value b);
  Value mul(Value a, Value b);
  Value div(Value a, Value b);
  Value neg(Value a);
  Value cmp(arith::CmpFPredicate predicate, Value a, Value b);
  Value select(Value condition, Value ifTrue, Value ifFalse);
  /// An f32 tensor shaped like `like` filled with `value`.
  Value constantLike(double value, Value like);
  /// An f32 tensor shaped like `like` filled with the f32 scalar `scalar`.
  Value splat(Value scalar, Value like);
  /// `a·value` for a compile-time constant.
  Value scale(Value a, double value) { return mul(a, constantLike(value, a)); }
  /// `select(condition, g, 0)`: routes a cotangent to the chosen elements.
  Value where(Value condition, Value g) {
    return select(condition, g, constantLike(0.0, g));
  }

  /// Replicates `input` along `dims` to the shape of `like` (f32).
  Value broadcast(Value input, ArrayRef<int64_t> dims, Value like);
  /// Sums `input` over `dims`; marks the sum `across_rows` where it must be.
  Value reduceSum(Value input, ArrayRef<int64_t> dims);
  /// `input · matrixᵀ` (`over` 1) or `input · matrix` (`over` 0): the
  /// cotangent of `like` (its shape, in f32; the operands may leave sizes
  /// dynamic that it knows).
  Value contract(Value input, Value matrix, int64_t over, Value like);
  /// `leftᵀ · right` over the rows: the cotangent of `like`.
  Value contractRows(Value left, Value right, Value like);
  /// The number of elements of `tensor` along `dims`, as an f32 scalar.
  Value elementCount(Value tensor, ArrayRef<int64_t> dims);
  /// The size of dimension `dim` of `tensor`, as an index.
  Value dimSize(Value tensor, int64_t dim);
  Value indexAdd(Value a, Value b);
  /// Converts `value` to the element type `elementType` (no-op if equal).
  Value castTo(Value value, Type elementType);

  /// Whether a gradient must reach `value`: what the differentiator's
  /// activity analysis says, or true where no analysis was given. A rule
  /// that cannot form some operand's cotangent asks this before failing.
  bool needsCotangent(Value value) const {
    return !activeValues || activeValues->contains(value);
  }
  void setActiveValues(const llvm::DenseSet<Value> *values) {
    activeValues = values;
  }

private:
  OpBuilder &builder;
  Location loc;
  const llvm::DenseSet<Value> *activeValues = nullptr;
};

} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_IR_ADJOINTBUILDER_H
