//===- KernelModel.h - how a tile kernel maps onto a GPU grid ---*- C++ -*-===//
//
// Every tensor value of a kernel is one of a few kinds, which decide where
// and how often it is computed:
//
//   Element     [M, W]: computed per (row, column), inside a column loop
//   RowValue    [M]:    one per row, uniform across the CTA handling the row
//                       (a reduction over the row, or math on such values)
//   Column      [N]:    one per column, shared by every row (weights)
//   AcrossRows  [N]:    combines every row (dW): per-CTA partials in a
//                       workspace, summed by a finalize kernel
//   Uniform     scalars and index arithmetic: once per kernel
//
// The kinds of rank-1 arguments (a weight [N] or a saved per-row value [M])
// are inferred from how they are used.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_KERNELMODEL_H
#define TILE_LIB_CONVERSION_TILETOGPU_KERNELMODEL_H

#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tile::gpu_lowering {

using mlir::tile::kMaxKernelOps;

/// A non-splat tensor constant becomes a table in the GPU module's global
/// memory; larger ones belong in an argument.
constexpr int64_t kMaxConstantElements = 1 << 16;

enum class ValueKind { Uniform, Element, RowValue, Column, AcrossRows };

/// One parameter of the generated kernels, in order. Both kernels of a
/// function (row and finalize) take the same list; the manifest prints it.
struct KernelParam {
  enum class Kind {
    Argument,  // a buffer (tensor argument) or the value (scalar argument)
    Result,    // a buffer
    Rows,      // index: the row count
    Width,     // index: the width of tensor argument `index`
    Ctas,      // index: the row kernel's CTA count (partials per column)
    Workspace, // fp32 buffer for cross-row partials
    Arrivals,  // i32 counter of CTAs done with their partials, zero between
               // launches (a folded finalize only; the launcher owns it)
  };
  Kind kind;
  unsigned index = 0;
};

StringRef stringifyKind(ValueKind kind);

inline bool isTensor(Value value) {
  return isa<RankedTensorType>(value.getType());
}

/// An op whose result at a column depends only on its operands at that
/// column: an elementwise op or a cast.
inline bool isColumnwise(Operation *op) {
  return isa<CastOp>(op) || op->hasTrait<OpTrait::Elementwise>();
}

inline Type elementTypeOf(Value value) { return getElementTypeOrSelf(value); }

inline int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

/// How a tensor value's width (its last dimension) is known. These are the
/// shape rules, in one place: the emitter builds widths from them, the plan
/// groups equal ones and the manifest names them.
struct WidthRule {
  enum class Kind {
    Argument, // `value`, a tensor argument: its width parameter
    Size,     // `value`, an index value: a slice's size
    Sum,      // `parts`, a concat's inputs
    Constant, // `constant`, a tensor constant's static width
    SameAs,   // `value`, another tensor of the same width
    None,     // no tensor operand tells (a diagnostic where it is needed)
  };
  Kind kind = Kind::None;
  Value value;
  OperandRange parts{nullptr, 0};
  int64_t constant = 0;
};

struct KernelModel {
  func::FuncOp func;
  DenseMap<Value, ValueKind> kinds;
  /// Reductions over the row, in program order: each needs its own pass
  /// over the row and a CTA-wide reduction.
  SmallVector<ReduceOp> rowReductions;
  /// Reductions across rows, in program order: each gets a workspace slot.
  SmallVector<ReduceOp> acrossRowReductions;

  /// Non-splat tensor constants, in program order: each is read from a
  /// table in the GPU module (PointEmitter.cpp), and the manifest pins the
  /// rows of those read per row.
  llvm::SetVector<arith::ConstantOp> constantTables;

  ValueKind kindOf(Value value) const { return kinds.lookup(value); }
  /// The constant `value` is, if it is read from a table.
  arith::ConstantOp tableOf(Value value) const {
    auto constant = value.getDefiningOp<arith::ConstantOp>();
    return constant && constantTables.contains(constant) ? constant
                                                         : arith::ConstantOp();
  }
  /// The parameter list of the kernels; `arrivals`: the row kernel folds
  /// the finalize in (KernelPlan::foldedFinalize).
  SmallVector<KernelParam> parameters(bool arrivals) const;
  /// The tensor values `op` requires to be equally wide: the operands of an
  /// elementwise op or cast, a row broadcast's input and shape. The manifest
  /// states each as a constraint the launcher checks, so the emitter may
  /// treat them as one width.
  SmallVector<Value> sameWidthValues(Operation &op) const;
  bool hasAcrossRows() const { return !acrossRowReductions.empty(); }

  /// The rule that gives `value`'s width.
  WidthRule widthRule(Value value) const;
  /// Whether `tensor.dim` reads the row count (dimension 0 of a 2-D tensor,
  /// any dimension of a per-row vector) rather than a width.
  bool dimReadsRows(tensor::DimOp dim) const;
  /// The input arguments `value` reads at the columns it is evaluated at
  /// (through elementwise ops, casts and broadcasts), by argument number;
  /// slices, pads and concats shift or guard the column and load where
  /// they are evaluated.
  SmallVector<BlockArgument> inputsAtColumn(Value value) const;

  /// Classifies every value; emits a diagnostic at the first construct the
  /// lowering does not handle.
  static FailureOr<KernelModel> analyze(func::FuncOp func);
};

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_KERNELMODEL_H
