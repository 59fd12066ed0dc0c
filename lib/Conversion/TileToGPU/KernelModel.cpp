//===- KernelModel.cpp - classify the values of a tile kernel ------------===//
//
// Kinds propagate through the ops to a fixed point: elementwise ops and
// casts share one kind among their tensor operands and result, a `like`
// operand gives its kind to splats and pads, broadcasts and reductions map
// kinds by their dimensions. What is left unknown, or conflicts, is a
// diagnostic: the lowering never guesses.
//
//===----------------------------------------------------------------------===//

#include "KernelModel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseSet.h"

#include <deque>

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

StringRef gpu_lowering::stringifyKind(ValueKind kind) {
  switch (kind) {
  case ValueKind::Uniform:
    return "uniform";
  case ValueKind::Element:
    return "per-element";
  case ValueKind::RowValue:
    return "per-row";
  case ValueKind::Column:
    return "per-column";
  case ValueKind::AcrossRows:
    return "across-rows";
  }
  return "?";
}

namespace {

void propagate(Operation *op, struct Propagator &p);

/// Propagation state: known kinds, and the ops to visit again because one
/// of their values just got a kind. Each value gets its kind once, so the
/// work is linear in the kernel (sweeping the whole body until nothing
/// changed was quadratic on a chain whose kind comes from its end).
struct Propagator {
  explicit Propagator(DenseMap<Value, ValueKind> &kinds) : kinds(kinds) {}

  DenseMap<Value, ValueKind> &kinds;
  Operation *conflictAt = nullptr;
  /// The value asked to be of two kinds at conflictAt (the one it keeps is
  /// in `kinds`), and the kind asked for.
  Value conflictValue;
  ValueKind conflictWanted = ValueKind::Uniform;
  /// First in, first out, seeded in program order: a conflict is found at
  /// the op a reader would blame, the first to combine the two kinds.
  std::deque<Operation *> worklist;
  llvm::DenseSet<Operation *> queued;

  void enqueue(Operation *op) {
    if (queued.insert(op).second)
      worklist.push_back(op);
  }
  /// The op that gave each value its kind (for errors).
  DenseMap<Value, Operation *> kindFrom;

  void set(Value value, ValueKind kind, Operation *where) {
    auto [it, inserted] = kinds.try_emplace(value, kind);
    if (inserted) {
      kindFrom[value] = where;
      if (Operation *def = value.getDefiningOp())
        enqueue(def);
      for (Operation *user : value.getUsers())
        enqueue(user);
      return;
    }
    if (it->second != kind && !conflictAt) {
      conflictAt = where;
      conflictValue = value;
      conflictWanted = kind;
    }
  }
  std::optional<ValueKind> get(Value value) const {
    auto it = kinds.find(value);
    if (it == kinds.end())
      return std::nullopt;
    return it->second;
  }
  /// All of `values` get the kind any of them has.
  void unify(ArrayRef<Value> values, Operation *where) {
    std::optional<ValueKind> kind;
    for (Value value : values)
      if (auto known = get(value))
        kind = known;
    if (kind)
      for (Value value : values)
        set(value, *kind, where);
  }
  void run() {
    while (!worklist.empty() && !conflictAt) {
      Operation *op = worklist.front();
      worklist.pop_front();
      queued.erase(op);
      propagate(op, *this);
    }
  }
};

void propagate(Operation *op, Propagator &p) {
  if (auto cast = dyn_cast<CastOp>(op))
    return p.unify({cast.getInput(), cast.getResult()}, op);
  if (auto splat = dyn_cast<SplatOp>(op))
    return p.unify({splat.getShape(), splat.getResult()}, op);
  if (auto iota = dyn_cast<IotaOp>(op))
    return p.unify({iota.getShape(), iota.getResult()}, op);
  if (auto pad = dyn_cast<PadOp>(op)) {
    p.set(pad.getInput(), ValueKind::Element, op);
    p.set(pad.getResult(), ValueKind::Element, op);
    return;
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    p.set(slice.getInput(), ValueKind::Element, op);
    p.set(slice.getResult(), ValueKind::Element, op);
    return;
  }
  if (isa<RepeatOp, SwapHalvesOp>(op)) {
    // Read at other columns than the result's, as a slice is.
    p.set(op->getOperand(0), ValueKind::Element, op);
    p.set(op->getResult(0), ValueKind::Element, op);
    return;
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    for (Value input : concat.getInputs())
      p.set(input, ValueKind::Element, op);
    p.set(concat.getResult(), ValueKind::Element, op);
    return;
  }
  if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    p.set(broadcast.getResult(), ValueKind::Element, op);
    ArrayRef<int64_t> dims = broadcast.getDims();
    if (dims == ArrayRef<int64_t>{1})
      p.set(broadcast.getInput(), ValueKind::RowValue, op);
    else if (dims == ArrayRef<int64_t>{0})
      p.set(broadcast.getInput(), ValueKind::Column, op);
    return;
  }
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    p.set(reduce.getInput(), ValueKind::Element, op);
    ArrayRef<int64_t> dims = reduce.getDims();
    if (dims == ArrayRef<int64_t>{1}) {
      p.set(reduce.getResult(), ValueKind::RowValue, op);
      if (reduce.getInit())
        p.set(reduce.getInit(), ValueKind::RowValue, op);
    } else if (dims == ArrayRef<int64_t>{0}) {
      p.set(reduce.getResult(), ValueKind::AcrossRows, op);
      if (reduce.getInit())
        p.set(reduce.getInit(), ValueKind::Column, op);
    }
    return;
  }
  if (op->hasTrait<OpTrait::Elementwise>()) {
    SmallVector<Value> tensors;
    for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (isTensor(value))
        tensors.push_back(value);
    if (tensors.empty())
      return;
    // Math on a finished cross-row sum runs in the finalize, per column:
    // its other operands are per-column values.
    bool acrossRows = llvm::any_of(tensors, [&](Value value) {
      return p.get(value) == ValueKind::AcrossRows;
    });
    if (acrossRows) {
      for (Value result : op->getResults())
        p.set(result, ValueKind::AcrossRows, op);
      for (Value operand : op->getOperands())
        if (isTensor(operand) && !p.get(operand))
          p.set(operand, ValueKind::Column, op);
      return;
    }
    // Otherwise one kind is shared: a per-column value combined with a
    // per-row one would be per-element, which takes a broadcast.
    p.unify(tensors, op);
  }
}
/// The error for a value two ops need as different kinds. A cross-row
/// result is complete only after every row: the lowering computes it last
/// (the finalize), so no row can read it. Users broadcast one back to the
/// rows (a max across rows, or the derived backward of one) and were told
/// only to broadcast.
LogicalResult reportConflict(const Propagator &p) {
  ValueKind had = *p.get(p.conflictValue), wanted = p.conflictWanted;
  bool hadAcross = had == ValueKind::AcrossRows;
  if (hadAcross || wanted == ValueKind::AcrossRows) {
    Operation *first = p.kindFrom.lookup(p.conflictValue);
    // The op that made the value cross-row, and the one that read it so.
    Operation *maker = hadAcross ? first : p.conflictAt;
    Operation *reader = hadAcross ? p.conflictAt : first;
    ValueKind other = hadAcross ? wanted : had;
    bool rowsRead = other == ValueKind::Element ||
                    other == ValueKind::RowValue ||
                    (reader && isa<BroadcastOp>(reader));
    if (rowsRead && maker) {
      InFlightDiagnostic diag = maker->emitOpError(
          "makes a cross-row result (complete only after every row), which "
          "rows of the same kernel read; the GPU lowering computes "
          "cross-row results last, in the finalize: return it, and use it "
          "in a second kernel");
      if (reader && reader != maker)
        diag.attachNote(reader->getLoc()) << "read by the rows here";
      return diag;
    }
  }
  if ((had == ValueKind::RowValue && wanted == ValueKind::Column) ||
      (had == ValueKind::Column && wanted == ValueKind::RowValue))
    return p.conflictAt->emitOpError(
        "mixes per-row and per-column values; broadcast one of them first");
  return p.conflictAt->emitOpError("needs a value both ")
         << stringifyKind(had) << " and " << stringifyKind(wanted);
}
/// A contraction makes the kernel a GEMM with the rest as its epilogue, a
/// kernel shape this model does not describe yet: refused here, which every
/// way to the GPU and the C API's compile pass through.
LogicalResult refuseContractions(Block &body) {
  for (Operation &op : body)
    if (isa<ContractOp, ContractRowsOp>(op))
      return op.emitOpError(
          "is a contraction, which the GPU lowering does not handle yet "
          "(issue 62); tile-run evaluates, differentiates and "
          "gradient-checks it");
  return success();
}
} // namespace

FailureOr<KernelModel> KernelModel::analyze(func::FuncOp func) {
  KernelModel model;
  model.func = func;
  Propagator p(model.kinds);
  Block &body = func.getBody().front();
  // LLVM's NVPTX backend takes time quadratic in a kernel's size (measured:
  // 5,000 elementwise ops 1.4 s, 10,000 9.6 s, 20,000 45 s to PTX).
  if (int64_t ops = static_cast<int64_t>(body.getOperations().size());
      ops > kMaxKernelOps)
    return func.emitOpError("has ")
           << ops << " ops; the GPU lowering takes kernels of at most "
           << kMaxKernelOps << " (split it into several kernels)";
  if (failed(refuseContractions(body)))
    return failure();

  // Every op queued first, in program order: seeding an argument queues its
  // users, which would otherwise run ahead of the ops that define what
  // they combine it with (a main_grad's addition made the cross-row sum it
  // adds per column before the sum was seen, and then refused it).
  for (Operation &op : body)
    p.enqueue(&op);
  // Seeds: rank-2 tensors are per element, scalars uniform, and the roles
  // tile-differentiate wrote.
  for (BlockArgument arg : body.getArguments()) {
    if (!isTensor(arg)) {
      p.set(arg, ValueKind::Uniform, func);
      continue;
    }
    int64_t rank = rankOf(arg);
    if (rank == 2)
      p.set(arg, ValueKind::Element, func);
    else if (rank != 1)
      return func.emitOpError("argument #")
             << arg.getArgNumber() << " has rank " << rank
             << "; the GPU lowering handles [rows, width] tensors and "
                "rank-1 per-row or per-column vectors";
    DictionaryAttr attrs = func.getArgAttrDict(arg.getArgNumber());
    // Saved values, and integer data (labels), are per row, also where no
    // op reads them (a derived backward keeps every primal argument).
    if ((attrs && attrs.get(TileDialect::getSavedAttrName())) ||
        (rank == 1 && elementTypeOf(arg).isInteger()))
      p.set(arg, ValueKind::RowValue, func);
    if (attrs && attrs.get(TileDialect::getMainGradAttrName()))
      p.set(arg, ValueKind::Column, func);
  }
  for (Operation &op : body) {
    for (Value result : op.getResults()) {
      if (!isTensor(result)) {
        p.set(result, ValueKind::Uniform, &op);
        continue;
      }
      int64_t rank = rankOf(result);
      if (rank == 2)
        p.set(result, ValueKind::Element, &op);
      else if (rank != 1)
        return op.emitOpError("has a rank-")
               << rank
               << " result; the GPU lowering handles [rows, width] "
                  "tensors and rank-1 per-row or per-column vectors";
    }
  }
  p.run();
  // What nothing ties to rows or to columns (a weight the kernel never
  // reads, and its zero gradient in the derived backward) is free: it is
  // taken per column, the kind of a rank-1 argument's own vector. Without
  // this the lowering rejected backward kernels tile-differentiate derived.
  auto freeToColumn = [&](Value value, Operation *where) {
    if (isTensor(value) && !p.get(value)) {
      p.set(value, ValueKind::Column, where);
      p.run();
    }
  };
  for (BlockArgument arg : body.getArguments())
    freeToColumn(arg, func);
  for (Operation &op : body)
    for (Value value : llvm::concat<Value>(op.getOperands(), op.getResults()))
      freeToColumn(value, &op);
  if (p.conflictAt)
    return reportConflict(p);

  // Integer data is read one value per row (a label), with a scalar load:
  // the vectorized column loops move floats only.
  for (BlockArgument arg : body.getArguments())
    if (isTensor(arg) && elementTypeOf(arg).isInteger() &&
        p.get(arg) != ValueKind::RowValue)
      return func.emitOpError("argument #")
             << arg.getArgNumber() << " (" << arg.getType() << ") is integer "
             << "data per " << stringifyKind(*p.get(arg))
             << "; the GPU lowering reads integer tensors per row only (one "
                "label per row): pass other integer data as floats";
  for (Operation &op : body) {
    for (Value value : llvm::concat<Value>(op.getOperands(), op.getResults()))
      if (isTensor(value) && !p.get(value))
        return op.emitOpError("cannot tell whether a rank-1 value is per "
                              "row or per column; broadcast it or reduce "
                              "into it");
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      ArrayRef<int64_t> dims = reduce.getDims();
      if (dims == ArrayRef<int64_t>{1})
        model.rowReductions.push_back(reduce);
      else if (dims == ArrayRef<int64_t>{0})
        model.acrossRowReductions.push_back(reduce);
      else
        return op.emitOpError("reduces dimensions that the GPU lowering "
                              "does not handle yet (only the row [1] or "
                              "across rows [0] of a [rows, width] tensor)");
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op);
        constant && isTensor(constant.getResult())) {
      // A non-splat constant becomes a table in the kernel's global memory
      // (PointEmitter.cpp): it must be dense, of floats, and small.
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!dense)
        return op.emitOpError("has a tensor constant the GPU lowering cannot "
                              "read; write it as dense<...>");
      if (!dense.isSplat()) {
        if (!isa<FloatType>(dense.getElementType()))
          return op.emitOpError("has a non-splat constant of ")
                 << dense.getElementType()
                 << "; the GPU lowering takes non-splat constants of floats";
        if (dense.getNumElements() > kMaxConstantElements)
          return op.emitOpError("has a constant of ")
                 << dense.getNumElements()
                 << " elements; the GPU lowering takes non-splat constants "
                    "of at most "
                 << kMaxConstantElements << " (pass larger ones as arguments)";
        model.constantTables.insert(constant);
      }
    }
    if (auto broadcast = dyn_cast<BroadcastOp>(op))
      if (broadcast.getDims().size() != 1)
        return op.emitOpError("broadcasts along several dimensions, which "
                              "the GPU lowering does not handle yet");
    if (isa<func::ReturnOp, tensor::DimOp>(op) || op.getDialect() == nullptr)
      continue;
    // Cross-row results may only flow into per-column math and the return.
    for (Value operand : op.getOperands())
      if (p.get(operand) == ValueKind::AcrossRows)
        for (Value result : op.getResults())
          if (p.get(result) != ValueKind::AcrossRows)
            return op.emitOpError("uses a cross-row sum as a per-")
                   << stringifyKind(*p.get(result))
                   << " value; only per-column math may follow it";
  }
  return model;
}

SmallVector<Value> KernelModel::sameWidthValues(Operation &op) const {
  SmallVector<Value> values;
  if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    if (broadcast.getDims() == ArrayRef<int64_t>{0})
      values = {broadcast.getInput(), broadcast.getShape()};
  } else if (isColumnwise(&op)) {
    for (Value operand : op.getOperands())
      if (isTensor(operand) && kindOf(operand) != ValueKind::RowValue &&
          kindOf(operand) != ValueKind::Uniform)
        values.push_back(operand);
  }
  return values;
}

SmallVector<KernelParam> KernelModel::parameters(bool arrivals) const {
  using Kind = KernelParam::Kind;
  func::FuncOp f = func;
  SmallVector<KernelParam> params;
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    params.push_back({Kind::Argument, i});
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    params.push_back({Kind::Result, i});
  params.push_back({Kind::Rows});
  // Per-row vectors ([rows]) need no width of their own.
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (isTensor(f.getArgument(i)) &&
        kindOf(f.getArgument(i)) != ValueKind::RowValue)
      params.push_back({Kind::Width, i});
  params.push_back({Kind::Ctas});
  params.push_back({Kind::Workspace});
  if (arrivals)
    params.push_back({Kind::Arrivals});
  return params;
}

WidthRule KernelModel::widthRule(Value value) const {
  using Kind = WidthRule::Kind;
  if (auto arg = dyn_cast<BlockArgument>(value))
    return {Kind::Argument, arg};
  Operation *def = value.getDefiningOp();
  if (auto slice = dyn_cast<SliceOp>(def))
    return {Kind::Size, slice.getSize()};
  if (auto concat = dyn_cast<ConcatOp>(def))
    return {Kind::Sum, Value(), concat.getInputs()};
  if (auto pad = dyn_cast<PadOp>(def))
    return {Kind::SameAs, pad.getShape()};
  if (auto repeat = dyn_cast<RepeatOp>(def))
    return {Kind::SameAs, repeat.getShape()};
  if (auto broadcast = dyn_cast<BroadcastOp>(def))
    return {Kind::SameAs, broadcast.getShape()};
  if (auto splat = dyn_cast<SplatOp>(def))
    return {Kind::SameAs, splat.getShape()};
  if (auto iota = dyn_cast<IotaOp>(def))
    return {Kind::SameAs, iota.getShape()};
  if (auto reduce = dyn_cast<ReduceOp>(def))
    return {Kind::SameAs, reduce.getInput()};
  if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
    WidthRule rule{Kind::Constant};
    rule.constant =
        cast<RankedTensorType>(constant.getType()).getShape().back();
    return rule;
  }
  for (Value operand : def->getOperands())
    if (isTensor(operand) && kindOf(operand) != ValueKind::RowValue)
      return {Kind::SameAs, operand};
  return {};
}

bool KernelModel::dimReadsRows(tensor::DimOp dim) const {
  std::optional<int64_t> index = dim.getConstantIndex();
  Value source = dim.getSource();
  return index && ((*index == 0 && rankOf(source) == 2) ||
                   kindOf(source) == ValueKind::RowValue);
}

SmallVector<BlockArgument> KernelModel::inputsAtColumn(Value value) const {
  SmallVector<Value> worklist{value};
  llvm::DenseSet<Value> seen;
  SmallVector<BlockArgument> inputs;
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    if (!seen.insert(next).second || !isTensor(next))
      continue;
    ValueKind kind = kindOf(next);
    if (kind == ValueKind::RowValue || kind == ValueKind::Uniform)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(next)) {
      inputs.push_back(arg);
      continue;
    }
    Operation *def = next.getDefiningOp();
    if (auto broadcast = dyn_cast<BroadcastOp>(def))
      worklist.push_back(broadcast.getInput());
    else if (isColumnwise(def))
      llvm::append_range(worklist, def->getOperands());
  }
  llvm::sort(inputs, [](BlockArgument x, BlockArgument y) {
    return x.getArgNumber() < y.getArgNumber();
  });
  return inputs;
}
