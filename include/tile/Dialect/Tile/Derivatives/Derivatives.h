//===- Derivatives.h - derivative rules for upstream ops --------*- C++ -*-===//
//
// Upstream arith and math ops know nothing about differentiation; their
// reverse-mode rules are attached as external models of
// DifferentiableOpInterface when the dialects load.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_DERIVATIVES_DERIVATIVES_H
#define TILE_DIALECT_TILE_DERIVATIVES_DERIVATIVES_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::tile {

/// Attaches the derivative rules of the supported arith and math ops.
void registerDerivativeModels(DialectRegistry &registry);

namespace detail {
void registerArithDerivativeModels(DialectRegistry &registry);
void registerMathDerivativeModels(DialectRegistry &registry);
} // namespace detail

} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_DERIVATIVES_DERIVATIVES_H
