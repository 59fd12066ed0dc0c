//===- PointEmitter.h - a kernel's values at a point ------------*- C++ -*-===//
//
// The point emitter builds the kernel's dataflow at a point instead of
// materializing tensors: an element value is an expression of (row, column)
// built inside the loop that needs it, a per-row value a scalar computed
// once per row before the loops that read it, a uniform value a scalar
// computed once at kernel entry. Slices, pads and concatenations become
// index arithmetic and branches, so any width works without padding or
// copies.
//
// The bodies (RowKernel.cpp, ResidentRows.cpp, FinalizeKernel.cpp) drive
// it: they open rows and loops, set the lanes of the loop they emit and
// scope what the point emitter remembers, each through an RAII object, and
// tell it how a thread folds its columns of a row (RowFolder).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_POINTEMITTER_H
#define TILE_LIB_CONVERSION_TILETOGPU_POINTEMITTER_H

#include "KernelFrame.h"
#include "RowExchange.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/SaveAndRestore.h"

namespace mlir::tile::gpu_lowering {

/// Element evaluations (PointEmitter::group) a kernel may take before the
/// lowering gives up with an error: a fixed allowance plus a multiple of
/// its op count. A kernel evaluates each op a few times (the vector loop,
/// the scalar tail, each loop over the row); the bound keeps a pathological
/// DAG (each level a concat of the one below, 2^levels evaluations) from
/// exhausting time and memory.
constexpr int64_t kEvaluationAllowance = 100000;
constexpr int64_t kEvaluationsPerOp = 16;

/// A row sum of exp(x - max(x)) (a logsumexp's, a softmax's) folded in the
/// pass of the max it is shifted by, "online": each thread keeps its running
/// max and rescales its sum by exp(old - new) when the max grows; after the
/// max's exchange each thread rescales its sum to the row's max, and a
/// second exchange adds them. One pass over the row instead of two.
struct OnlineSum {
  ReduceOp sum;
  /// The max among the reductions folded together (its index).
  size_t max;
  /// The fastmath flags of the sum's exponential, which the sum's steps
  /// and rescales take too (approximateShiftedExponentials marks it).
  arith::FastMathFlags expFlags() const {
    ReduceOp reduce = sum;
    return reduce.getInput().getDefiningOp<math::ExpOp>().getFastmath();
  }
};

/// How a thread folds its columns of the row into one value, for a row
/// reduction: the body being emitted knows which columns it holds.
class RowFolder {
public:
  virtual ~RowFolder() = default;
  virtual Value fold(ReduceOp reduce) = 0;
  /// Each of `members` folded (their inputs ready), then each of `online`
  /// folded against its max's running value (foldsOnline). By default one
  /// fold per member.
  virtual SmallVector<Value> foldTogether(ArrayRef<ReduceOp> members,
                                          ArrayRef<OnlineSum> online) {
    assert(online.empty() && "this body folds no online sums");
    SmallVector<Value> folds;
    for (ReduceOp member : members)
      folds.push_back(fold(member));
    return folds;
  }
  /// Whether foldTogether takes online sums.
  virtual bool foldsOnline() const { return false; }
};

class PointEmitter {
public:
  explicit PointEmitter(KernelFrame &frame);

  //--- Set-up, at kernel entry -------------------------------------------//
  /// A scalar argument's value inside the kernel.
  void mapUniform(Value argument, Value value) { uniform.map(argument, value); }
  /// Every uniform value and every width, once, in program order.
  LogicalResult evaluateUniforms();
  /// Uniform i1: every buffer is 16-byte aligned and every row, slice and
  /// pad starts at a multiple of the vector width.
  Value alignmentTest();

  //--- Widths and scalars ------------------------------------------------//
  Value widthOf(Value value);
  /// The bound of a column loop over `value`'s width class
  /// (WidthClasses::loopBound).
  Value loopWidth(Value value);
  Value uniformValue(Value value) { return uniform.lookup(value); }

  //--- Values at a point -------------------------------------------------//
  /// The value of a per-row tensor at the current row.
  Value rowValue(Value value);
  /// Computes, before the column loops, every per-row value `value` reads.
  void prepareRowValues(Value value);
  /// The values of `value` at columns base, ..., base + lanes - 1 of the
  /// current row (one value in the scalar loops).
  Lanes group(Value value, Value base);
  /// The value at one column (scalar loops and the finalize).
  Value elementAt(Value value, Value col) { return group(value, col)[0]; }
  /// Loads, at columns base.., every input argument that `value` reads at
  /// those same columns, before any of the chunk's math.
  void prefetch(Value value, Value base);
  /// The finalize's total of `reduce` at this thread's column.
  void setAcrossRowsTotal(ReduceOp reduce, Value total) {
    acrossRowsTotals[reduce] = total;
  }

  //--- Memory ------------------------------------------------------------//
  Lanes loadGroup(Value buffer, Value at);
  /// One 16-byte load of `lanes` elements, and its lanes.
  Value loadVector(Value buffer, Value at);
  Lanes extractLanes(Value vector);
  void storeGroup(ArrayRef<Value> values, Value buffer, Value at);

  //--- Scopes ------------------------------------------------------------//
  int64_t lanes() const { return laneCount; }
  /// Emits `lanes` columns at a time until the scope ends.
  [[nodiscard]] llvm::SaveAndRestore<int64_t> withLanes(int64_t lanes) {
    return {laneCount, lanes};
  }
  /// With `on`, widens loaded 16-bit lanes from their words again until
  /// the scope ends (ResidentRows.cpp: after the row's exchanges).
  [[nodiscard]] llvm::SaveAndRestore<bool> withRewidening(bool on) {
    return {rewidenFromWords, on};
  }
  /// Folds rows with `folder` until the scope ends.
  [[nodiscard]] llvm::SaveAndRestore<RowFolder *>
  withFolder(RowFolder *folder) {
    return {rowFolder, folder};
  }
  /// Forgets the element values evaluated inside the scope (a region ends:
  /// they do not dominate what follows), and with `rowsToo` the per-row
  /// ones.
  class MemoScope {
  public:
    explicit MemoScope(PointEmitter &points, bool rowsToo = false)
        : points(points), elements(points.elementMemo), rowsToo(rowsToo) {
      if (rowsToo)
        rows = points.rowMemo;
    }
    ~MemoScope() {
      points.elementMemo = std::move(elements);
      if (rowsToo)
        points.rowMemo = std::move(rows);
    }
    MemoScope(const MemoScope &) = delete;
    MemoScope &operator=(const MemoScope &) = delete;

  private:
    PointEmitter &points;
    DenseMap<std::pair<Value, Value>, Lanes> elements;
    DenseMap<Value, Value> rows;
    bool rowsToo;
  };
  /// Takes `lanes` as `value`'s at columns base.. (loads carried in).
  void remember(Value value, Value base, Lanes lanes) {
    elementMemo[{value, base}] = std::move(lanes);
  }
  /// Forgets every computed element value, keeping the loaded arguments
  /// (of per-column arguments too unless `columns`).
  void forgetComputed(bool columns);

  //--- Rows --------------------------------------------------------------//
  /// Starts a row: its index, whether it exists (null: it does) and the
  /// parity of its first exchange.
  void beginRow(Value index, Value valid, Value parity);
  Value row() const { return rowIndex; }
  Value rowValid() const { return rowExists; }
  /// Ends a row: the parity the next row starts with, for the loop to carry.
  Value finishRow() { return exchange.finishRow(); }

  /// Whether emission gave up on a value shared too often (the caller
  /// reports it).
  bool exhausted() const { return evaluations > maxEvaluations; }
  int64_t evaluationLimit() const { return maxEvaluations; }

private:
  Value widthOfSource(Value source);
  Value emitScalarOp(Operation *op, ArrayRef<Value> operands);
  /// The flat global holding a non-splat tensor constant's elements.
  Value constantTable(arith::ConstantOp constant);
  Value convert(Value value, Type to);
  /// Widens lane `lane` of a loaded 16-bit vector from its 32-bit word:
  /// bf16 to f32 by a shift or a mask of the word's bits; with `opaque`,
  /// after an xor with an opaque zero (see rewidenFromWords).
  Value widenFromWord(Value vector, int64_t lane, Type to, bool opaque);
  /// Reduces `reduce` over the row, together with every other row
  /// reduction whose inputs are ready (one exchange), and memoizes them.
  Value reduceRow(ReduceOp reduce);
  /// Whether every row reduction `value` depends on is already reduced.
  bool inputsReduced(Value value);
  /// The row sum of exp(x - max) that `max` (a row max of x) shifts, not
  /// yet reduced, if there is one: the sum an online fold can take.
  ReduceOp onlineSumOf(ReduceOp max);
  /// Whether `reduce` is a pick: the row sum of select(iota == L, x, 0)
  /// for a per-row L (a label's logit), which is x at column L.
  bool isPick(ReduceOp reduce);
  /// A pick's value: x at column L where L is a whole number in
  /// [0, width), else 0 — one element read instead of a pass over the row.
  Value pickRow(ReduceOp reduce);
  /// The column a per-row label names, as an index: {whether the label is
  /// a whole number in [0, width), that column (0 when it is not)}.
  std::pair<Value, Value> labelColumn(Value label, Value width);
  /// Whether `test` is iota == broadcast(L) (or !=) for a per-row L.
  bool isColumnTest(arith::CmpFOp test);
  /// A column test's lanes: iota == L (or !=) per lane, compared as
  /// integers against the label's column, computed once per group.
  Lanes columnTest(arith::CmpFOp test, Value base);
  Value acrossRowsTotal(ReduceOp reduce, Value col);
  Lanes emitConcat(ValueRange inputs, Value base);
  /// The column of its input (operand 0) that an op reading its input at
  /// other columns (broadcast along rows, slice, repeat, swap_halves) reads
  /// for result column `base`; null for any other op.
  Value inputColumn(Operation *def, Value base);
  /// Half of a swap_halves block, as an index.
  Value halfBlock(SwapHalvesOp swap);
  /// The swap's block where it is a constant that divides `lanes` > 1:
  /// every group then holds whole blocks, and the swap trades its lanes.
  static std::optional<int64_t> blockWithinGroup(SwapHalvesOp swap,
                                                 int64_t lanes);
  Lanes branch(Value condition, function_ref<Lanes()> then,
               function_ref<Lanes()> otherwise, Type type);

  KernelFrame &f;
  OpBuilder &b;
  Location loc;
  RowExchange exchange;

  IRMapping uniform;
  llvm::MapVector<Value, Value> widths;
  DenseMap<Value, Value> rowMemo;
  DenseMap<std::pair<Value, Value>, Lanes> elementMemo;
  DenseMap<Operation *, Value> acrossRowsTotals;
  /// Per non-splat constant: its table, read through memref.get_global.
  llvm::MapVector<Operation *, Value> constantTables;

  Value rowIndex;
  /// i1: the group's row exists (only with several rows per CTA).
  Value rowExists;
  int64_t laneCount = 1;
  RowFolder *rowFolder = nullptr;
  /// Set in a resident body after the row's exchanges: widening a loaded
  /// 16-bit lane reads it out of its 32-bit word again (widenFromWord).
  bool rewidenFromWords = false;
  /// i32 zero, hidden from the optimizers (widenFromWord).
  Value opaqueZero;
  /// A loaded 16-bit vector as i32 words (widenFromWord).
  DenseMap<Value, Value> loadedWords;

  /// Element values evaluated so far (group), against maxEvaluations.
  int64_t evaluations = 0;
  int64_t maxEvaluations;
};

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_POINTEMITTER_H
