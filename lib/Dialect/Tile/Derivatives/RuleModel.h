//===- RuleModel.h - one external model for every rule ----------*- C++ -*-===//
//
// Each upstream op's rule is a free function
//
//   void adjoint(AdjointBuilder &b, OpTy op, Value g, Cotangents &out);
//
// that receives the result's cotangent `g` and appends one cotangent per
// operand. RuleModel<OpTy> adapts it to DifferentiableOpInterface, so a rule
// is a few lines of formula and attaching it is one line of KernelOps.def.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_DIALECT_TILE_DERIVATIVES_RULEMODEL_H
#define TILE_LIB_DIALECT_TILE_DERIVATIVES_RULEMODEL_H

#include "tile/Dialect/Tile/IR/TileOps.h"

namespace mlir::tile::detail {

using Cotangents = SmallVectorImpl<Value>;

template <typename OpTy>
struct RuleModel final
    : DifferentiableOpInterface::ExternalModel<RuleModel<OpTy>, OpTy> {
  LogicalResult buildAdjoint(Operation *op, AdjointBuilder &builder,
                             ValueRange results, Cotangents &operands) const {
    // Every supported upstream op has one result.
    adjoint(builder, cast<OpTy>(op), results[0], operands);
    return success();
  }
};

template <typename OpTy> void attachRule(MLIRContext *context) {
  OpTy::template attachInterface<RuleModel<OpTy>>(*context);
}

} // namespace mlir::tile::detail

#endif // TILE_LIB_DIALECT_TILE_DERIVATIVES_RULEMODEL_H
