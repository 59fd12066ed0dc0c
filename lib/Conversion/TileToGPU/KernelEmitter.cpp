//===- KernelEmitter.cpp - tile kernel → gpu.func ------------------------===//
//
// The emitter evaluates the kernel's dataflow at a point instead of
// materializing tensors: an element value is an expression of (row, column)
// built inside the loop that needs it, a per-row value a scalar computed once
// per row before the loops that read it, a uniform value a scalar computed
// once at kernel entry. Slices, pads and concatenations become index
// arithmetic and branches, so any width works without padding or copies.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <limits>

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

namespace {
/// Kernel buffers are flat memrefs of a static, unreachable size: the
/// bare-pointer convention passes one pointer per buffer but only for static
/// shapes, and the real sizes arrive as parameters.
constexpr int64_t kFlatSize = int64_t(1) << 40;

MemRefType flatBuffer(Type elementType) {
  return MemRefType::get({kFlatSize}, elementType);
}

Type elementTypeOf(Value value) { return getElementTypeOrSelf(value); }

bool isTensor(Value value) { return isa<RankedTensorType>(value.getType()); }

int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

enum class Mode { Rows, Finalize };

class Emitter {
public:
  Emitter(const KernelModel &model, const Schedule &schedule, Mode mode,
          gpu::GPUModuleOp module)
      : model(model), func(model.func), schedule(schedule), mode(mode),
        module(module), b(module.getContext()), loc(func.getLoc()) {}

  LogicalResult emit();

private:
  // Set-up.
  void createKernel();
  LogicalResult emitPrologue();
  Value widthOf(Value value);

  // Evaluation.
  Value uniformValue(Value value);
  Value rowValue(Value value);
  Value elementAt(Value value, Value col);
  void prepareRowValues(Value value);
  Value emitScalarOp(Operation *op, ArrayRef<Value> operands);
  Value convert(Value value, Type to);
  Value reduceRow(ReduceOp reduce);
  Value acrossRowsTotal(ReduceOp reduce, Value col);
  Value emitConcat(ValueRange inputs, Value col);

  // Bodies.
  void emitRowBody();
  void emitFinalizeBody();

  // Helpers.
  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value f32(double value) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(value));
  }
  Value identity(ReductionKind kind, Type type);
  Value combine(ReductionKind kind, Value a, Value c);
  Value blockReduce(ReductionKind kind, Value value);
  Value indexToF32(Value value);
  /// `for (i = tid; i < end; i += threads)` with `body(i)`, memo-scoped.
  void columnLoop(Value end, function_ref<void(Value)> body);

  const KernelModel &model;
  func::FuncOp func;
  const Schedule &schedule;
  Mode mode;
  gpu::GPUModuleOp module;
  OpBuilder b;
  Location loc;

  gpu::GPUFuncOp kernel;
  DenseMap<Value, Value> pointers; // tensor argument -> buffer
  SmallVector<Value> resultPointers;
  DenseMap<Value, Value> argWidths;
  Value rows, ctas, workspace, shared;
  Value tid, threads, bid, grid;
  DenseMap<Operation *, Value> workspaceBase; // across-rows reduce -> offset

  IRMapping uniform;
  DenseMap<Value, Value> widths;
  DenseMap<Value, Value> rowMemo;
  DenseMap<std::pair<Value, Value>, Value> elementMemo;
  Value row;
};

//===----------------------------------------------------------------------===//
// Set-up
//===----------------------------------------------------------------------===//

void Emitter::createKernel() {
  using Kind = KernelParam::Kind;
  SmallVector<KernelParam> layout = model.parameters();
  SmallVector<Type> params;
  for (const KernelParam &param : layout) {
    switch (param.kind) {
    case Kind::Argument: {
      Value arg = func.getArgument(param.index);
      params.push_back(isTensor(arg) ? Type(flatBuffer(elementTypeOf(arg)))
                                     : arg.getType());
      break;
    }
    case Kind::Result:
      params.push_back(
          flatBuffer(getElementTypeOrSelf(func.getResultTypes()[param.index])));
      break;
    case Kind::Workspace:
      params.push_back(flatBuffer(b.getF32Type()));
      break;
    default:
      params.push_back(b.getIndexType());
    }
  }

  std::string name = func.getSymName().str();
  if (mode == Mode::Finalize)
    name += "_finalize";
  b.setInsertionPointToEnd(module.getBody());
  auto sharedType = MemRefType::get(
      {32}, b.getF32Type(), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(),
                                 gpu::GPUDialect::getWorkgroupAddressSpace()));
  kernel = gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(params, {}),
                                  TypeRange{sharedType});
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  kernel.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(schedule.threads), 1, 1}));
  shared = kernel.getWorkgroupAttributions().front();

  Block &entry = kernel.getBody().front();
  resultPointers.resize(func.getNumResults());
  for (auto [param, value] : llvm::zip(layout, entry.getArguments())) {
    switch (param.kind) {
    case Kind::Argument:
      if (isTensor(func.getArgument(param.index)))
        pointers[func.getArgument(param.index)] = value;
      else
        uniform.map(func.getArgument(param.index), value);
      break;
    case Kind::Result:
      resultPointers[param.index] = value;
      break;
    case Kind::Rows:
      rows = value;
      break;
    case Kind::Width:
      argWidths[func.getArgument(param.index)] = value;
      break;
    case Kind::Ctas:
      ctas = value;
      break;
    case Kind::Workspace:
      workspace = value;
      break;
    }
  }

  b.setInsertionPointToStart(&entry);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  threads = index(schedule.threads);
  bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  grid = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
}

Value Emitter::widthOf(Value value) {
  if (Value known = widths.lookup(value))
    return known;
  Value width;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    width = argWidths.lookup(arg);
  } else {
    Operation *def = value.getDefiningOp();
    if (auto slice = dyn_cast<SliceOp>(def))
      width = uniformValue(slice.getSize());
    else if (auto concat = dyn_cast<ConcatOp>(def)) {
      for (Value input : concat.getInputs())
        width = width ? arith::AddIOp::create(b, loc, width, widthOf(input))
                      : widthOf(input);
    } else if (auto pad = dyn_cast<PadOp>(def))
      width = widthOf(pad.getShape());
    else if (auto broadcast = dyn_cast<BroadcastOp>(def))
      width = widthOf(broadcast.getShape());
    else if (auto splat = dyn_cast<SplatOp>(def))
      width = widthOf(splat.getShape());
    else if (auto reduce = dyn_cast<ReduceOp>(def))
      width = widthOf(reduce.getInput());
    else if (auto constant = dyn_cast<arith::ConstantOp>(def))
      width =
          index(cast<RankedTensorType>(constant.getType()).getShape().back());
    else
      for (Value operand : def->getOperands())
        if (isTensor(operand) && model.kindOf(operand) != ValueKind::RowValue) {
          width = widthOf(operand);
          break;
        }
  }
  widths[value] = width;
  return width;
}

LogicalResult Emitter::emitPrologue() {
  // Uniform values and every width, once, at kernel entry, in program order.
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    bool anyTensor = llvm::any_of(op.getResults(), isTensor);
    if (!anyTensor) {
      if (auto dim = dyn_cast<tensor::DimOp>(op)) {
        std::optional<int64_t> index = dim.getConstantIndex();
        if (!index)
          return dim.emitOpError("needs a constant dimension index");
        Value source = dim.getSource();
        bool isRows = (*index == 0 && rankOf(source) == 2) ||
                      model.kindOf(source) == ValueKind::RowValue;
        uniform.map(dim.getResult(), isRows ? rows : widthOf(source));
        continue;
      }
      SmallVector<Value> operands;
      for (Value operand : op.getOperands())
        operands.push_back(uniformValue(operand));
      Operation *clone = b.clone(op);
      clone->setOperands(operands);
      uniform.map(op.getResults(), clone->getResults());
      continue;
    }
    for (Value result : op.getResults())
      if (model.kindOf(result) != ValueKind::RowValue)
        (void)widthOf(result);
  }
  // Workspace slots, one [ctas, width] block per cross-row reduction.
  Value offset = index(0);
  for (ReduceOp reduce : model.acrossRowReductions) {
    workspaceBase[reduce] = offset;
    Value size = arith::MulIOp::create(b, loc, ctas, widthOf(reduce));
    offset = arith::AddIOp::create(b, loc, offset, size);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

Value Emitter::uniformValue(Value value) { return uniform.lookup(value); }

Value Emitter::convert(Value value, Type to) {
  Type from = value.getType();
  if (from == to)
    return value;
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, to, value);
  return arith::TruncFOp::create(b, loc, to, value);
}

Value Emitter::indexToF32(Value value) {
  Value asInt = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), value);
  return arith::UIToFPOp::create(b, loc, b.getF32Type(), asInt);
}

Value Emitter::emitScalarOp(Operation *op, ArrayRef<Value> operands) {
  if (auto sigmoid = dyn_cast<SigmoidOp>(op)) {
    Value e =
        math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, operands[0]));
    return arith::DivFOp::create(b, loc, f32(1.0),
                                 arith::AddFOp::create(b, loc, f32(1.0), e));
  }
  if (auto cast = dyn_cast<CastOp>(op))
    return convert(operands[0], elementTypeOf(cast.getResult()));
  if (auto splat = dyn_cast<SplatOp>(op))
    return uniformValue(splat.getValue());
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto dense = cast<SplatElementsAttr>(constant.getValue());
    return arith::ConstantOp::create(b, loc, dense.getSplatValue<TypedAttr>());
  }
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  for (Value result : op->getResults())
    state.addTypes(elementTypeOf(result));
  state.addAttributes(op->getAttrs());
  return b.create(state)->getResult(0);
}

Value Emitter::identity(ReductionKind kind, Type type) {
  auto floatType = cast<FloatType>(type);
  switch (kind) {
  case ReductionKind::Max:
    return arith::ConstantOp::create(
        b, loc, type,
        b.getFloatAttr(type, APFloat::getInf(floatType.getFloatSemantics(),
                                             /*Negative=*/true)));
  case ReductionKind::Min:
    return arith::ConstantOp::create(
        b, loc, type,
        b.getFloatAttr(type, APFloat::getInf(floatType.getFloatSemantics())));
  default:
    return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, 0.0));
  }
}

Value Emitter::combine(ReductionKind kind, Value a, Value c) {
  switch (kind) {
  case ReductionKind::Max:
    return arith::MaximumFOp::create(b, loc, a, c);
  case ReductionKind::Min:
    return arith::MinimumFOp::create(b, loc, a, c);
  default:
    return arith::AddFOp::create(b, loc, a, c);
  }
}

Value Emitter::blockReduce(ReductionKind kind, Value value) {
  // Within each warp by shuffles, then across warps through shared memory,
  // read back by every thread in the same order: the result is uniform and
  // the same on every run.
  for (int32_t offset = 16; offset >= 1; offset /= 2) {
    Value other =
        gpu::ShuffleOp::create(b, loc, value, offset, 32, gpu::ShuffleMode::XOR)
            .getShuffleResult();
    value = combine(kind, value, other);
  }
  Value lane = arith::RemUIOp::create(b, loc, tid, index(32));
  Value warp = arith::DivUIOp::create(b, loc, tid, index(32));
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
  auto store = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    memref::StoreOp::create(b, loc, value, shared, ValueRange{warp});
  }
  gpu::BarrierOp::create(b, loc);
  Value total = memref::LoadOp::create(b, loc, shared, ValueRange{index(0)});
  for (int64_t w = 1; w < schedule.threads / 32; ++w)
    total =
        combine(kind, total,
                memref::LoadOp::create(b, loc, shared, ValueRange{index(w)}));
  // The next reduction may overwrite the slots only once all have read.
  gpu::BarrierOp::create(b, loc);
  return total;
}

void Emitter::columnLoop(Value end, function_ref<void(Value)> body) {
  auto loop = scf::ForOp::create(b, loc, tid, end, threads);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  auto saved = elementMemo;
  body(loop.getInductionVar());
  elementMemo = std::move(saved);
}

Value Emitter::reduceRow(ReduceOp reduce) {
  Value input = reduce.getInput();
  prepareRowValues(input);
  Value init = identity(reduce.getKind(), b.getF32Type());
  auto loop = scf::ForOp::create(b, loc, tid, widthOf(input), threads,
                                 ValueRange{init});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    auto saved = elementMemo;
    Value element = elementAt(input, loop.getInductionVar());
    Value acc = combine(reduce.getKind(), loop.getRegionIterArg(0), element);
    scf::YieldOp::create(b, loc, acc);
    elementMemo = std::move(saved);
  }
  Value total = blockReduce(reduce.getKind(), loop.getResult(0));
  if (reduce.getKind() == ReductionKind::Mean)
    total = arith::DivFOp::create(b, loc, total, indexToF32(widthOf(input)));
  if (Value acc = reduce.getInit())
    total = combine(reduce.getKind(), rowValue(acc), total);
  return total;
}

Value Emitter::rowValue(Value value) {
  if (Value known = rowMemo.lookup(value))
    return known;
  Value result;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    result =
        memref::LoadOp::create(b, loc, pointers.lookup(arg), ValueRange{row});
  } else if (auto reduce = value.getDefiningOp<ReduceOp>()) {
    result = reduceRow(reduce);
  } else {
    Operation *def = value.getDefiningOp();
    SmallVector<Value> operands;
    for (Value operand : def->getOperands())
      operands.push_back(isTensor(operand) ? rowValue(operand)
                                           : uniformValue(operand));
    result = emitScalarOp(def, operands);
  }
  rowMemo[value] = result;
  return result;
}

void Emitter::prepareRowValues(Value value) {
  // Per-row values must exist before the column loops that read them, so
  // that each is computed once per row and stays in scope.
  SmallVector<Value> worklist{value};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    if (!seen.insert(next).second || !isTensor(next))
      continue;
    if (model.kindOf(next) == ValueKind::RowValue) {
      (void)rowValue(next);
      continue;
    }
    if (Operation *def = next.getDefiningOp())
      if (!isa<ReduceOp>(def) || model.kindOf(next) != ValueKind::AcrossRows)
        llvm::append_range(worklist, def->getOperands());
    if (auto reduce = next.getDefiningOp<ReduceOp>())
      if (Value init = reduce.getInit())
        worklist.push_back(init);
  }
}

Value Emitter::acrossRowsTotal(ReduceOp reduce, Value col) {
  // Σ over the row kernel's CTAs, in CTA order: deterministic.
  Value width = widthOf(reduce);
  Value base = arith::AddIOp::create(b, loc, workspaceBase.lookup(reduce), col);
  Value init = identity(reduce.getKind(), b.getF32Type());
  auto loop =
      scf::ForOp::create(b, loc, index(0), ctas, index(1), ValueRange{init});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value at = arith::AddIOp::create(
        b, loc, base,
        arith::MulIOp::create(b, loc, loop.getInductionVar(), width));
    Value partial = memref::LoadOp::create(b, loc, workspace, ValueRange{at});
    scf::YieldOp::create(
        b, loc, combine(reduce.getKind(), loop.getRegionIterArg(0), partial));
  }
  Value total = loop.getResult(0);
  if (reduce.getKind() == ReductionKind::Mean)
    total = arith::DivFOp::create(b, loc, total, indexToF32(rows));
  if (Value acc = reduce.getInit())
    total = combine(reduce.getKind(), elementAt(acc, col), total);
  return total;
}

Value Emitter::elementAt(Value value, Value col) {
  if (!isTensor(value))
    return uniformValue(value);
  ValueKind kind = model.kindOf(value);
  if (kind == ValueKind::RowValue)
    return rowValue(value);
  auto key = std::make_pair(value, col);
  if (Value known = elementMemo.lookup(key))
    return known;

  Value result;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Value at = col;
    if (kind == ValueKind::Element)
      at = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, row, widthOf(arg)), col);
    result =
        memref::LoadOp::create(b, loc, pointers.lookup(arg), ValueRange{at});
  } else {
    Operation *def = value.getDefiningOp();
    if (auto reduce = dyn_cast<ReduceOp>(def)) {
      result = acrossRowsTotal(reduce, col);
    } else if (auto broadcast = dyn_cast<BroadcastOp>(def)) {
      result = elementAt(broadcast.getInput(), col);
    } else if (auto slice = dyn_cast<SliceOp>(def)) {
      Value shifted =
          arith::AddIOp::create(b, loc, col, uniformValue(slice.getOffset()));
      result = elementAt(slice.getInput(), shifted);
    } else if (auto pad = dyn_cast<PadOp>(def)) {
      Value offset = uniformValue(pad.getOffset());
      Value end =
          arith::AddIOp::create(b, loc, offset, widthOf(pad.getInput()));
      Value inside = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, col, offset),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, col, end));
      Type type = elementTypeOf(value);
      auto branch = scf::IfOp::create(b, loc, TypeRange{type}, inside,
                                      /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        auto saved = elementMemo;
        b.setInsertionPointToStart(branch.thenBlock());
        Value shifted = arith::SubIOp::create(b, loc, col, offset);
        scf::YieldOp::create(b, loc, elementAt(pad.getInput(), shifted));
        b.setInsertionPointToStart(branch.elseBlock());
        scf::YieldOp::create(
            b, loc,
            arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, 0.0))
                .getResult());
        elementMemo = std::move(saved);
      }
      result = branch.getResult(0);
    } else if (auto concat = dyn_cast<ConcatOp>(def)) {
      result = emitConcat(concat.getInputs(), col);
    } else {
      SmallVector<Value> operands;
      for (Value operand : def->getOperands())
        operands.push_back(elementAt(operand, col));
      result = emitScalarOp(def, operands);
    }
  }
  elementMemo[key] = result;
  return result;
}
Value Emitter::emitConcat(ValueRange inputs, Value col) {
  if (inputs.size() == 1)
    return elementAt(inputs.front(), col);
  Value width = widthOf(inputs.front());
  Value inFirst =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, col, width);
  Type type = elementTypeOf(inputs.front());
  auto branch = scf::IfOp::create(b, loc, TypeRange{type}, inFirst,
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  auto saved = elementMemo;
  b.setInsertionPointToStart(branch.thenBlock());
  scf::YieldOp::create(b, loc, elementAt(inputs.front(), col));
  elementMemo = saved;
  b.setInsertionPointToStart(branch.elseBlock());
  Value rest = arith::SubIOp::create(b, loc, col, width);
  scf::YieldOp::create(b, loc, emitConcat(inputs.drop_front(), rest));
  elementMemo = std::move(saved);
  return branch.getResult(0);
}

//===----------------------------------------------------------------------===//
// Bodies
//===----------------------------------------------------------------------===//

void Emitter::emitRowBody() {
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());

  // Each CTA owns one row of every workspace slot: zero it first, so that a
  // CTA without rows contributes nothing.
  for (ReduceOp reduce : model.acrossRowReductions) {
    Value width = widthOf(reduce);
    Value base =
        arith::AddIOp::create(b, loc, workspaceBase.lookup(reduce),
                              arith::MulIOp::create(b, loc, bid, width));
    Value zero = identity(reduce.getKind(), b.getF32Type());
    columnLoop(width, [&](Value col) {
      Value at = arith::AddIOp::create(b, loc, base, col);
      memref::StoreOp::create(b, loc, zero, workspace, ValueRange{at});
    });
  }

  auto rowLoop = scf::ForOp::create(b, loc, bid, rows, grid);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(rowLoop.getBody());
  row = rowLoop.getInductionVar();
  rowMemo.clear();

  // What each column loop writes, grouped by width: outputs per element,
  // and the partials of the cross-row reductions.
  struct Sink {
    Value value;
    Value pointer;      // output buffer, or null for a partial
    ReduceOp partialOf; // the cross-row reduction fed
  };
  SmallVector<std::pair<Value, SmallVector<Sink>>> groups;
  auto addSink = [&](Value width, Sink sink) {
    for (auto &[groupWidth, sinks] : groups)
      if (groupWidth == width) {
        sinks.push_back(sink);
        return;
      }
    groups.push_back({width, {sink}});
  };
  SmallVector<std::pair<Value, Value>> rowOutputs;
  for (auto [index, result] : llvm::enumerate(returnOp.getOperands())) {
    ValueKind kind = model.kindOf(result);
    if (kind == ValueKind::Element)
      addSink(widthOf(result), {result, resultPointers[index], {}});
    else if (kind == ValueKind::RowValue)
      rowOutputs.push_back({result, resultPointers[index]});
  }
  for (ReduceOp reduce : model.acrossRowReductions)
    addSink(widthOf(reduce), {reduce.getInput(), Value(), reduce});

  for (auto &[width, sinks] : groups) {
    for (Sink &sink : sinks)
      prepareRowValues(sink.value);
    Value rowStart = arith::MulIOp::create(b, loc, row, width);
    columnLoop(width, [&](Value col) {
      for (Sink &sink : sinks) {
        Value element = elementAt(sink.value, col);
        if (sink.pointer) {
          Value at = arith::AddIOp::create(b, loc, rowStart, col);
          memref::StoreOp::create(b, loc, element, sink.pointer,
                                  ValueRange{at});
          continue;
        }
        Value at = arith::AddIOp::create(
            b, loc, workspaceBase.lookup(sink.partialOf),
            arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, bid, width), col));
        Value partial =
            memref::LoadOp::create(b, loc, workspace, ValueRange{at});
        memref::StoreOp::create(
            b, loc, combine(sink.partialOf.getKind(), partial, element),
            workspace, ValueRange{at});
      }
    });
  }

  if (!rowOutputs.empty()) {
    SmallVector<Value> values;
    for (auto &[value, pointer] : rowOutputs)
      values.push_back(rowValue(value));
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, index(0));
    auto store = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    b.setInsertionPointToStart(store.thenBlock());
    for (auto [value, output] : llvm::zip(values, rowOutputs))
      memref::StoreOp::create(b, loc, value, output.second, ValueRange{row});
  }
}

void Emitter::emitFinalizeBody() {
  // One thread per column of each per-column output.
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  Value col = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bid, threads), tid);
  for (auto [index, result] : llvm::enumerate(returnOp.getOperands())) {
    ValueKind kind = model.kindOf(result);
    if (kind != ValueKind::AcrossRows && kind != ValueKind::Column)
      continue;
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, col,
                                         widthOf(result));
    auto branch = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    auto saved = elementMemo;
    memref::StoreOp::create(b, loc, elementAt(result, col),
                            resultPointers[index], ValueRange{col});
    elementMemo = std::move(saved);
  }
}

LogicalResult Emitter::emit() {
  createKernel();
  if (failed(emitPrologue()))
    return failure();
  if (mode == Mode::Rows)
    emitRowBody();
  else
    emitFinalizeBody();
  b.setInsertionPointToEnd(&kernel.getBody().front());
  gpu::ReturnOp::create(b, loc);
  return success();
}
} // namespace

LogicalResult gpu_lowering::emitKernels(const KernelModel &model,
                                        const Schedule &schedule,
                                        gpu::GPUModuleOp module) {
  func::FuncOp func = model.func;
  if (schedule.threads % 32 != 0 || schedule.threads < 32 ||
      schedule.threads > 1024)
    return func.emitOpError("threads per CTA must be a multiple of 32 "
                            "between 32 and 1024, not ")
           << schedule.threads;
  if (failed(Emitter(model, schedule, Mode::Rows, module).emit()))
    return failure();
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  bool needsFinalize = llvm::any_of(returnOp.getOperands(), [&](Value v) {
    ValueKind kind = model.kindOf(v);
    return kind == ValueKind::AcrossRows || kind == ValueKind::Column;
  });
  if (needsFinalize)
    return Emitter(model, schedule, Mode::Finalize, module).emit();
  return success();
}
