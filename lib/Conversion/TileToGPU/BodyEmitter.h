//===- BodyEmitter.h - the loops every kernel body is made of ---*- C++ -*-===//
//
// The base of the body emitters (RowKernel.cpp, ResidentRows.cpp,
// FinalizeKernel.cpp): the row loop, the strided column loops and the
// per-row outputs, built on the frame and the point emitter.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_BODYEMITTER_H
#define TILE_LIB_CONVERSION_TILETOGPU_BODYEMITTER_H

#include "PointEmitter.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::tile::gpu_lowering {

class BodyEmitter {
public:
  BodyEmitter(KernelFrame &frame, PointEmitter &points)
      : f(frame), ev(points), b(frame.b), loc(frame.loc) {}

protected:
  /// One strided loop at the current lane count; what `body` evaluates is
  /// forgotten after it.
  void stridedLoop(Value start, Value end, Value stride,
                   function_ref<void(Value)> body);
  /// Visits every column `< end` of the row: `body(base)` handles columns
  /// base .. base + lanes - 1. With a vector width, aligned rows go `lanes`
  /// columns at a time with 16-byte accesses and a scalar loop takes the
  /// tail; misaligned rows take the scalar loop throughout.
  void columnLoop(Value end, function_ref<void(Value)> body);
  /// The row loop: the CTA walks blocks of rowsPerCta rows, and each group
  /// of threads its row of the block. The loop carries `inits` and, last,
  /// the exchange parity; its body must yield PointEmitter::finishRow() last.
  scf::ForOp createRowLoop(ValueRange inits);
  /// Computes the per-row results of the current row, before any column
  /// loop stores: a result's reduction that no column loop needs
  /// (scaled_silu_and_mul's ds) would otherwise be a pass after the
  /// stores, reading again an input that a kernel run in place (dx over x)
  /// has written over.
  void prepareRowOutputs();
  /// Writes the per-row results of the current row (the group's first
  /// thread).
  void storeRowOutputs();
  /// The column of each sink's value that the loop's column `col` stands
  /// for: `col` itself, or in a part's range (KernelPlan::Sink::part).
  SmallVector<Value> sinkColumns(ArrayRef<KernelPlan::Sink> sinks, Value col);
  /// Where a sink's value at `column` (its sinkColumns entry) goes in its
  /// result, on the current row; `loopRowStart` is the row's start at the
  /// loop's width, a whole-row sink's pitch.
  Value sinkAddress(const KernelPlan::Sink &sink, Value loopRowStart,
                    Value column);

  KernelFrame &f;
  PointEmitter &ev;
  OpBuilder &b;
  Location loc;
};

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_BODYEMITTER_H
