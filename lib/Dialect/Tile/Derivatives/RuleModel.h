//===- RuleModel.h - one external model for every rule ----------*- C++ -*-===//
//
// Each upstream op's rule is a free function
//
//   void adjoint(AdjointBuilder &b, OpTy op, Value g, Cotangents &out);
//
// that receives the result's cotangent `g` and appends one cotangent per
// operand, and optionally
//
//   RowShift rowShift(OpTy op, ArrayRef<RowShift> operands);
//
// RuleModel<OpTy> adapts them to DifferentiableOpInterface, so a rule is a
// few lines of formula and attaching it is one line of KernelOps.def.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_DIALECT_TILE_DERIVATIVES_RULEMODEL_H
#define TILE_LIB_DIALECT_TILE_DERIVATIVES_RULEMODEL_H

#include "tile/Dialect/Tile/IR/TileOps.h"

namespace mlir::tile::detail {

using Cotangents = SmallVectorImpl<Value>;

/// An op with no row-shift rule of its own: see RowShift::opaque. The
/// specific rules are non-template overloads next to the adjoints, found by
/// argument-dependent lookup (RowShift is in namespace mlir::tile) and
/// preferred to this one.
template <typename OpTy> RowShift rowShift(OpTy, ArrayRef<RowShift> operands) {
  return RowShift::opaque(operands);
}

template <typename OpTy>
struct RuleModel final
    : DifferentiableOpInterface::ExternalModel<RuleModel<OpTy>, OpTy> {
  LogicalResult buildAdjoint(Operation *op, AdjointBuilder &builder,
                             ValueRange results, Cotangents &operands) const {
    // Every supported upstream op has one result.
    adjoint(builder, cast<OpTy>(op), results[0], operands);
    return success();
  }

  RowShift propagateRowShift(Operation *op, ArrayRef<RowShift> operands) const {
    return rowShift(cast<OpTy>(op), operands);
  }
};

template <typename OpTy> void attachRule(MLIRContext *context) {
  OpTy::template attachInterface<RuleModel<OpTy>>(*context);
}

} // namespace mlir::tile::detail

#endif // TILE_LIB_DIALECT_TILE_DERIVATIVES_RULEMODEL_H
