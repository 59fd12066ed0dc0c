//===- TileInterfaces.td - op interfaces of the tile dialect -*- tablegen -*-===//
//
// The derivative rules. Every op that tile-differentiate may meet states its
// reverse-mode rule through DifferentiableOpInterface: tile ops implement it
// themselves, upstream arith/math ops get it as external models
// (lib/Dialect/Tile/Derivatives), the pattern Enzyme-MLIR uses.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_IR_TILEINTERFACES_TD
#define TILE_DIALECT_TILE_IR_TILEINTERFACES_TD

include "mlir/IR/OpBase.td"

def Tile_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let description = [{
    The reverse-mode derivative rule of an op. Given the cotangent of each
    result, the op builds the cotangent contribution of each operand: its
    vector-Jacobian product. The differentiator calls the rule on the op as
    recomputed inside the backward function, so the rule may read the op's
    operands and results directly.

    Cotangents are always `f32` tensors shaped like the value they belong to,
    whatever that value's storage type: gradients are accumulated in the
    compute type and converted to a storage type only at the function
    boundary. Non-float operands (index sizes, i1 masks) and `like` operands,
    which contribute only a shape, get no cotangent (a null Value).
  }];
  let cppNamespace = "::mlir::tile";
  let methods = [
    InterfaceMethod<[{
        Builds, with `builder`, the contribution of this op to the cotangent
        of each operand, given `resultCotangents` (one per result; a null
        Value for a result that receives none). Appends exactly one Value per
        operand to `operandCotangents`, null where the operand gets no
        cotangent. Emits a diagnostic and fails where the op cannot be
        differentiated in this form.
      }],
      "::llvm::LogicalResult", "buildAdjoint",
      (ins "::mlir::tile::AdjointBuilder &":$builder,
           "::mlir::ValueRange":$resultCotangents,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandCotangents)>,
    InterfaceMethod<[{
        How a per-row change of the values this op reads moves its result
        (RowShift.h), given each operand's in order: the differentiator
        finds with it the row statistics (a softmax's max) that no result
        depends on, and derives no cotangent for them. It follows this op's
        derivative rule: an operand the rule gives no cotangent (a `like`
        operand, a condition, an index) contributes no change.
      }],
      "::mlir::tile::RowShift", "propagateRowShift",
      (ins "::llvm::ArrayRef<::mlir::tile::RowShift>":$operands)>
  ];
}

#endif // TILE_DIALECT_TILE_IR_TILEINTERFACES_TD
