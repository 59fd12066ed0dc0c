//===- KernelFrame.h - the GPU kernel being emitted -------------*- C++ -*-===//
//
// Private to the lowering. The frame holds what every emitter of one GPU
// kernel reads: the plan, the builder, the kernel's parameters, its thread
// indices and the values computed once at its entry (KernelEmitter.cpp sets
// them up; afterwards they do not change), and the builder helpers that
// need nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_KERNELFRAME_H
#define TILE_LIB_CONVERSION_TILETOGPU_KERNELFRAME_H

#include "KernelPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::tile::gpu_lowering {

/// The row kernel, or the finalize kernel that sums its cross-row partials.
enum class Mode { Rows, Finalize };

/// A value at `lanes` consecutive columns (one in the scalar loops).
using Lanes = SmallVector<Value, 8>;

struct KernelFrame {
  KernelFrame(const KernelModel &model, const WidthClasses &widthClasses,
              const KernelPlan &plan, const Schedule &schedule, Mode mode,
              OpBuilder &b)
      : model(model), widthClasses(widthClasses), plan(plan),
        schedule(schedule), mode(mode), func(model.func), b(b),
        loc(func.getLoc()) {}

  const KernelModel &model;
  const WidthClasses &widthClasses;
  const KernelPlan &plan;
  const Schedule &schedule;
  Mode mode;
  func::FuncOp func;
  OpBuilder &b;
  Location loc;

  gpu::GPUFuncOp kernel;
  // Kept in insertion order: computeAlignment walks it, and walking a
  // DenseMap of Values follows pointer addresses (the emitted IR changed
  // from run to run).
  llvm::MapVector<Value, Value> pointers; // tensor argument -> buffer
  SmallVector<Value> resultPointers;
  /// Per tensor argument: its width parameter, or the constant the JIT
  /// specialized it for.
  DenseMap<Value, Value> argWidths;
  Value rows, ctas, workspace, shared;
  /// The folded finalize's arrivals counter (null without one).
  Value arrivals;
  Value tid, threads, bid, grid;
  /// A CTA works on rowsPerCta rows at once: `member` is a thread's index
  /// within its row's group of `groupSize` threads, `rowGroup` the group's
  /// index.
  Value member, groupSize, rowGroup;
  /// Uniform i1: every buffer and offset allows vector accesses (null in
  /// the finalize and without vectors).
  Value aligned;
  /// Per cross-row reduction: the offset of its `[ctas, width]` block of
  /// CTA partials in the workspace, and with several rows per CTA, of the
  /// looped body's `[ctas * rowsPerCta, width]` block of group partials.
  DenseMap<Operation *, Value> workspaceBase, scratchBase;

  func::ReturnOp returnOp() {
    return cast<func::ReturnOp>(func.getBody().front().getTerminator());
  }

  // Builder helpers.
  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value f32(double value) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(value));
  }
  Value identity(ReductionKind kind, Type type);
  Value combine(ReductionKind kind, Value a, Value c);
  /// `sum` (of exp(x - from)) rescaled to the max `to`: sum * exp(from -
  /// to), unchanged where from == to (no exp(-inf - -inf)). An online
  /// sum's step (RowKernel.cpp) and its rescale to the row's max
  /// (PointEmitter.cpp).
  Value rescaleSum(Value sum, Value from, Value to,
                   arith::FastMathFlags expFlags);
  /// `into[l] = into[l] ⊕ values[l]` for every lane, `into` first.
  void combineInto(ReductionKind kind, Lanes &into, ArrayRef<Value> values);
  /// `a && c`, where a null condition holds.
  Value andOf(Value a, Value c);
  Value indexToF32(Value value);
  /// The workspace index of column `col` of partial row `partialRow` in the
  /// block at `base` (workspaceBase or scratchBase) of rows `width` wide.
  Value workspaceAt(Value base, Value partialRow, Value width, Value col);
  /// Runs `body` only where `condition` (null: always) holds.
  void emitIf(Value condition, function_ref<void()> body);
};

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_KERNELFRAME_H
