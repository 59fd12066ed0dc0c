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
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tile::gpu_lowering {

/// The most ops one kernel may have for the GPU lowering (the examples
/// and their derived backward kernels have a few dozen).
constexpr int64_t kMaxKernelOps = 4096;

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

inline int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

struct KernelModel {
  func::FuncOp func;
  DenseMap<Value, ValueKind> kinds;
  /// Reductions over the row, in program order: each needs its own pass
  /// over the row and a CTA-wide reduction.
  SmallVector<ReduceOp> rowReductions;
  /// Reductions across rows, in program order: each gets a workspace slot.
  SmallVector<ReduceOp> acrossRowReductions;

  /// Non-splat tensor constants, in program order: each is read from a
  /// table in the GPU module (KernelEmitter.cpp), and the manifest pins the
  /// rows of those read per row.
  llvm::SetVector<arith::ConstantOp> constantTables;

  ValueKind kindOf(Value value) const { return kinds.lookup(value); }
  /// The constant `value` is, if it is read from a table.
  arith::ConstantOp tableOf(Value value) const {
    auto constant = value.getDefiningOp<arith::ConstantOp>();
    return constant && constantTables.contains(constant) ? constant
                                                         : arith::ConstantOp();
  }
  /// The parameter list of the kernels.
  SmallVector<KernelParam> parameters() const;
  /// The tensor values `op` requires to be equally wide: the operands of an
  /// elementwise op or cast, a row broadcast's input and shape. The manifest
  /// states each as a constraint the launcher checks, so the emitter may
  /// treat them as one width.
  SmallVector<Value> sameWidthValues(Operation &op) const;
  bool hasAcrossRows() const { return !acrossRowReductions.empty(); }

  /// Classifies every value; emits a diagnostic at the first construct the
  /// lowering does not handle.
  static FailureOr<KernelModel> analyze(func::FuncOp func);
};

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_KERNELMODEL_H
