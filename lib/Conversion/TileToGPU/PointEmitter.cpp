//===- PointEmitter.cpp - a kernel's values at a point --------------------===//
//
// See PointEmitter.h. Every value is memoized where it is computed: uniform
// ones for the kernel, per-row ones for the row, element ones for the
// chunk of columns and the region being emitted (MemoScope).
//
//===----------------------------------------------------------------------===//

#include "PointEmitter.h"

#include "tile/Dialect/Tile/IR/KernelVerifier.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

PointEmitter::PointEmitter(KernelFrame &frame)
    : f(frame), b(frame.b), loc(frame.loc), exchange(frame),
      maxEvaluations(
          kEvaluationAllowance +
          kEvaluationsPerOp *
              static_cast<int64_t>(
                  frame.func.getBody().front().getOperations().size())) {}

//===----------------------------------------------------------------------===//
// Set-up
//===----------------------------------------------------------------------===//

LogicalResult PointEmitter::evaluateUniforms() {
  // Uniform values and every width, once, at kernel entry, in program order.
  for (Operation &op : f.func.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    bool anyTensor = llvm::any_of(op.getResults(), isTensor);
    if (!anyTensor) {
      if (auto dim = dyn_cast<tensor::DimOp>(op)) {
        if (!dim.getConstantIndex())
          return dim.emitOpError("needs a constant dimension index");
        uniform.map(dim.getResult(), f.model.dimReadsRows(dim)
                                         ? f.rows
                                         : widthOf(dim.getSource()));
        continue;
      }
      SmallVector<Value> operands;
      for (Value operand : op.getOperands())
        operands.push_back(uniformValue(operand));
      assert(isKernelOp(&op) && "an op outside KernelOps.def reached the "
                                "emitter");
      Operation *clone = b.clone(op);
      clone->setOperands(operands);
      uniform.map(op.getResults(), clone->getResults());
      continue;
    }
    for (Value result : op.getResults())
      if (f.model.kindOf(result) != ValueKind::RowValue)
        (void)widthOf(result);
  }
  return success();
}

Value PointEmitter::alignmentTest() {
  // Rows go `lanes` at a time only if every buffer is 16-byte aligned and
  // every row, slice and pad starts at a multiple of the vector width.
  Value ok = arith::ConstantIntOp::create(b, loc, 1, 1);
  auto both = [&](Value condition) {
    ok = arith::AndIOp::create(b, loc, ok, condition);
  };
  auto multipleOf = [&](Value value, int64_t n) {
    Value rem = arith::RemUIOp::create(b, loc, value, f.index(n));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem,
                                 f.index(0));
  };
  // Per-row buffers are read and written one value per row: exempt. Every
  // other argument's width joins the widths tested below, read by an op or
  // not: a kernel may copy an argument to a result with no op between (the
  // GPU differential check found `return %arg2, %arg0` taking the vector
  // path at width 13: a misaligned 16-byte load).
  SmallVector<Value> buffers;
  for (auto [arg, pointer] : f.pointers)
    if (f.model.kindOf(arg) != ValueKind::RowValue) {
      buffers.push_back(pointer);
      (void)widthOf(arg);
    }
  auto returnOp = f.returnOp();
  for (auto [result, pointer] :
       llvm::zip(returnOp.getOperands(), f.resultPointers))
    if (f.model.kindOf(result) != ValueKind::RowValue)
      buffers.push_back(pointer);
  buffers.push_back(f.workspace);
  for (Value buffer : buffers) {
    Value address =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
    both(multipleOf(address, 16));
  }
  int64_t width = f.schedule.vectorWidth;
  // An element grid's chunks start at multiples of the vector width of the
  // flattened tensors, whatever the rows' width.
  if (!f.schedule.elementGrid)
    for (auto [value, w] : widths)
      if (w)
        both(multipleOf(w, width));
  for (Operation &op : f.func.getBody().front()) {
    if (auto slice = dyn_cast<SliceOp>(op))
      both(multipleOf(uniformValue(slice.getOffset()), width));
    if (auto pad = dyn_cast<PadOp>(op))
      both(multipleOf(uniformValue(pad.getOffset()), width));
    // A group's partner columns are a half block away (a repeat's input
    // width is among the widths above), unless the blocks lie inside the
    // groups.
    if (auto swap = dyn_cast<SwapHalvesOp>(op);
        swap && !blockWithinGroup(swap, width))
      both(multipleOf(halfBlock(swap), width));
  }
  return ok;
}

//===----------------------------------------------------------------------===//
// Widths
//===----------------------------------------------------------------------===//

Value PointEmitter::widthOf(Value value) {
  if (Value known = widths.lookup(value))
    return known;
  WidthRule rule = f.model.widthRule(value);
  Value width;
  switch (rule.kind) {
  case WidthRule::Kind::Argument:
    width = f.argWidths.lookup(rule.value);
    break;
  case WidthRule::Kind::Size:
    width = uniformValue(rule.value);
    break;
  case WidthRule::Kind::Sum:
    for (Value input : rule.parts)
      width = width ? arith::AddIOp::create(b, loc, width, widthOf(input))
                    : widthOf(input);
    break;
  case WidthRule::Kind::Constant:
    width = f.index(rule.constant);
    break;
  case WidthRule::Kind::SameAs:
    width = widthOf(rule.value);
    break;
  case WidthRule::Kind::None:
    break;
  }
  widths[value] = width;
  return width;
}

Value PointEmitter::widthOfSource(Value source) {
  return isTensor(source) ? widthOf(source) : uniformValue(source);
}

Value PointEmitter::loopWidth(Value value) {
  return widthOfSource(f.widthClasses.loopBound(value));
}

//===----------------------------------------------------------------------===//
// Scalars
//===----------------------------------------------------------------------===//

Value PointEmitter::convert(Value value, Type to) {
  Type from = value.getType();
  if (from == to)
    return value;
  // Integer data (a label, an iota's index) as a signed integer.
  if (from.isIntOrIndex()) {
    if (from.isIndex())
      value = arith::IndexCastOp::create(b, loc, b.getI64Type(), value);
    return arith::SIToFPOp::create(b, loc, to, value);
  }
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()) {
    // A lane of a 16-bit vector load (extractLanes): widened from its word
    // where it is bf16 (a bf16 is the top half of an f32, so one shift or
    // one mask: `cvt.f32.bf16` of the extracted half takes ptxas two
    // instructions for an upper lane) or where the body widens again
    // after the exchange.
    if (auto lane = value.getDefiningOp<vector::ExtractOp>())
      if (lane.getSource().getDefiningOp<vector::LoadOp>() &&
          !lane.hasDynamicPosition() && from.getIntOrFloatBitWidth() == 16 &&
          ((from.isBF16() && to.isF32()) || rewidenFromWords))
        return widenFromWord(lane.getSource(), lane.getStaticPosition()[0], to,
                             rewidenFromWords);
    return arith::ExtFOp::create(b, loc, to, value);
  }
  return arith::TruncFOp::create(b, loc, to, value);
}

Value PointEmitter::widenFromWord(Value vector, int64_t lane, Type to,
                                  bool opaque) {
  // The lane is cut out of its word after an xor with a zero that neither
  // LLVM nor ptxas can prove is zero: the row count's sign, spread over
  // all bits, so that no bit of it is known to either. Without it, both
  // fold the cut into the first pass's extraction of the same lane and
  // keep that pass's widened value alive across the exchange instead of
  // the word (ptxas, RMSNorm's f16 forward at 16384 columns: 144
  // registers; with it, 85).
  if (opaque && !opaqueZero) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&f.kernel.getBody().front());
    Value sign = arith::ShRSIOp::create(b, loc, f.rows, f.index(63));
    opaqueZero = arith::IndexCastOp::create(b, loc, b.getI32Type(), sign);
  }
  auto type = cast<VectorType>(vector.getType());
  // The words right after the load: they dominate every use of its lanes.
  Value &words = loadedWords[vector];
  if (!words) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(vector);
    words = vector::BitCastOp::create(
        b, loc, VectorType::get({type.getNumElements() / 2}, b.getI32Type()),
        vector);
  }
  Value word = vector::ExtractOp::create(b, loc, words, lane / 2);
  if (opaque)
    word = arith::XOrIOp::create(b, loc, word, opaqueZero);
  auto i32 = [&](int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  };
  if (type.getElementType().isBF16() && to.isF32()) {
    // The upper lane masked in place (0xffff0000), the lower one shifted
    // up.
    Value bits = lane % 2
                     ? Value(arith::AndIOp::create(b, loc, word, i32(-65536)))
                     : Value(arith::ShLIOp::create(b, loc, word, i32(16)));
    return arith::BitcastOp::create(b, loc, to, bits);
  }
  if (lane % 2)
    word = arith::ShRUIOp::create(b, loc, word, i32(16));
  Value half = arith::TruncIOp::create(b, loc, b.getI16Type(), word);
  Value narrow = arith::BitcastOp::create(b, loc, type.getElementType(), half);
  return arith::ExtFOp::create(b, loc, to, narrow);
}

Value PointEmitter::emitScalarOp(Operation *op, ArrayRef<Value> operands) {
  if (auto sigmoid = dyn_cast<SigmoidOp>(op)) {
    Value e =
        math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, operands[0]));
    // 1 / (1 + e) as rcp.approx (afn), not the IEEE rcp.rn, which ptxas
    // expands into a Newton step and a slow path: SwiGLU's forward at
    // 11008 columns and 512 threads went from 89 to 40 registers. The
    // approximation is within 1 ulp; the inputs are f32 sums of bf16/f16
    // or f32 values with tolerances far above that.
    auto quotient = arith::DivFOp::create(
        b, loc, f.f32(1.0), arith::AddFOp::create(b, loc, f.f32(1.0), e));
    quotient.setFastmath(arith::FastMathFlags::afn);
    return quotient;
  }
  if (auto cast = dyn_cast<CastOp>(op))
    return convert(operands[0], elementTypeOf(cast.getResult()));
  if (isa<StopGradientOp>(op)) // only the derivation tells it apart
    return operands[0];
  if (auto splat = dyn_cast<SplatOp>(op))
    return uniformValue(splat.getValue());
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    // Non-splat tensor constants are read from their table (group and
    // rowValue); only splats and scalars arrive here.
    if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()))
      return arith::ConstantOp::create(b, loc,
                                       dense.getSplatValue<TypedAttr>());
    return arith::ConstantOp::create(b, loc, constant.getValue());
  }
  // The rest of KernelOps.def lowers as the same op on scalars; the kernel
  // verifier has rejected anything else.
  assert(isKernelOp(op) && "an op outside KernelOps.def reached the emitter");
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  for (Value result : op->getResults())
    state.addTypes(elementTypeOf(result));
  // Only the op's own attributes (fastmath, a predicate): discardable ones
  // such as tile.save describe the tensor op and mean nothing on a scalar.
  DictionaryAttr discardable = op->getDiscardableAttrDictionary();
  for (NamedAttribute attr : op->getAttrs())
    if (!discardable.get(attr.getName()))
      state.addAttribute(attr.getName(), attr.getValue());
  return b.create(state)->getResult(0);
}

Value PointEmitter::constantTable(arith::ConstantOp constant) {
  Value &table = constantTables[constant];
  if (table)
    return table;
  // The constant's elements, row-major and flat, in a global of the GPU
  // module (16-byte aligned, for vector loads), read where the value is
  // evaluated like an argument of its shape.
  auto dense = cast<DenseElementsAttr>(constant.getValue());
  int64_t count = dense.getNumElements();
  auto flatType = RankedTensorType::get({count}, dense.getElementType());
  auto memoryType = MemRefType::get(
      {count}, dense.getElementType(), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Global));
  std::string name = (f.kernel.getName() + "_constant_" +
                      std::to_string(constantTables.size()))
                         .str();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(f.kernel);
    memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"),
                             memoryType, dense.reshape(flatType),
                             /*constant=*/true, b.getI64IntegerAttr(16));
    b.setInsertionPointToStart(&f.kernel.getBody().front());
    table = memref::GetGlobalOp::create(b, loc, memoryType, name);
  }
  return table;
}

//===----------------------------------------------------------------------===//
// Per-row values
//===----------------------------------------------------------------------===//

void PointEmitter::beginRow(Value index, Value valid, Value parity) {
  rowIndex = index;
  rowExists = valid;
  rowMemo.clear();
  exchange.beginRow(parity);
}

bool PointEmitter::inputsReduced(Value value) {
  SmallVector<Value> worklist{value};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    if (!seen.insert(next).second || !isTensor(next) || rowMemo.count(next))
      continue;
    Operation *def = next.getDefiningOp();
    if (!def)
      continue;
    if (isa<ReduceOp>(def) && f.model.kindOf(next) == ValueKind::RowValue)
      return false;
    llvm::append_range(worklist, def->getOperands());
  }
  return true;
}

ReduceOp PointEmitter::onlineSumOf(ReduceOp max) {
  if (max.getKind() != ReductionKind::Max || max.getInit())
    return {};
  Value x = max.getInput();
  auto shiftedBy = [&](Value value) {
    // broadcast(max) or broadcast(stop_gradient(max)) along the row.
    auto broadcast = value.getDefiningOp<BroadcastOp>();
    if (!broadcast)
      return false;
    Value source = broadcast.getInput();
    if (auto stop = source.getDefiningOp<StopGradientOp>())
      source = stop.getOperand();
    return source == max.getResult();
  };
  for (ReduceOp sum : f.model.rowReductions) {
    if (sum.getKind() != ReductionKind::Sum || sum.getInit() ||
        rowMemo.count(sum.getResult()))
      continue;
    auto exp = sum.getInput().getDefiningOp<math::ExpOp>();
    auto shifted =
        exp ? exp.getOperand().getDefiningOp<arith::SubFOp>() : arith::SubFOp();
    if (shifted && shifted.getLhs() == x && shiftedBy(shifted.getRhs()))
      return sum;
  }
  return {};
}

Value PointEmitter::reduceRow(ReduceOp reduce) {
  // Every row reduction whose inputs are ready joins this one, so that
  // independent reductions (RMSNorm's backward has two) share one exchange
  // and, in a looped body, one pass over the row.
  assert(rowFolder && "a row reduction outside a row body");
  prepareRowValues(reduce.getInput());
  // Its input's max may have folded it already (an online sum).
  if (Value known = rowMemo.lookup(reduce.getResult()))
    return known;
  // A joining reduction's init must be ready too, so that no init reads a
  // reduction of the same exchange before it is complete.
  SmallVector<ReduceOp> together{reduce};
  // A pick is read where it is needed (rowValue), not folded.
  for (ReduceOp other : f.model.rowReductions)
    if (static_cast<int64_t>(together.size()) < kMaxFusedReductions &&
        other != reduce && !rowMemo.count(other.getResult()) &&
        !isPick(other) && inputsReduced(other.getInput()) &&
        (!other.getInit() || inputsReduced(other.getInit())))
      together.push_back(other);
  SmallVector<ReductionKind> kinds;
  SmallVector<OnlineSum> online;
  for (auto [index, member] : llvm::enumerate(together)) {
    if (member != reduce)
      prepareRowValues(member.getInput());
    kinds.push_back(member.getKind());
    if (rowFolder->foldsOnline())
      if (ReduceOp sum = onlineSumOf(member))
        online.push_back({sum, index});
  }
  SmallVector<Value> folds = rowFolder->foldTogether(together, online);
  SmallVector<Value> partials(folds.begin(), folds.begin() + together.size());
  SmallVector<Value> totals = exchange.reduce(kinds, partials);
  // `reduce` last: its init may read the others.
  for (size_t i = together.size(); i-- > 0;) {
    ReduceOp member = together[i];
    Value total = totals[i];
    if (member.getKind() == ReductionKind::Mean)
      total = arith::DivFOp::create(b, loc, total,
                                    f.indexToF32(widthOf(member.getInput())));
    if (Value init = member.getInit())
      total = f.combine(member.getKind(), rowValue(init), total);
    rowMemo[member.getResult()] = total;
  }
  // Each online sum: the thread's sum rescaled from its own max to the
  // row's (1 where they are equal, so that a row of -inf adds zeros), then
  // added across the row.
  for (auto [index, sum] : llvm::enumerate(online)) {
    Value own = partials[sum.max];
    Value row = totals[sum.max];
    Value rescaled =
        f.rescaleSum(folds[together.size() + index], own, row, sum.expFlags());
    rowMemo[sum.sum.getResult()] =
        exchange.reduce({ReductionKind::Sum}, {rescaled})[0];
  }
  return rowMemo.lookup(reduce.getResult());
}

Value PointEmitter::rowValue(Value value) {
  if (Value known = rowMemo.lookup(value))
    return known;
  Value result;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    result = memref::LoadOp::create(b, loc, f.pointers.lookup(arg),
                                    ValueRange{rowIndex});
  } else if (auto reduce = value.getDefiningOp<ReduceOp>()) {
    result = isPick(reduce) ? pickRow(reduce) : reduceRow(reduce);
  } else if (auto iota = value.getDefiningOp<IotaOp>()) {
    // A per-row value's last dimension is the rows: its index is the row.
    result = convert(rowIndex, elementTypeOf(iota.getResult()));
  } else if (auto constant = f.model.tableOf(value)) {
    result = memref::LoadOp::create(b, loc, constantTable(constant),
                                    ValueRange{rowIndex});
  } else {
    Operation *def = value.getDefiningOp();
    SmallVector<Value> operands;
    // An operand read for its shape alone (a splat's `like`) is not
    // loaded: the kernel signature says no data of it is read.
    for (OpOperand &use : def->getOpOperands())
      operands.push_back(readsOnlyShape(use)   ? Value()
                         : isTensor(use.get()) ? rowValue(use.get())
                                               : uniformValue(use.get()));
    result = emitScalarOp(def, operands);
  }
  rowMemo[value] = result;
  return result;
}

void PointEmitter::prepareRowValues(Value value) {
  // Per-row values must exist before the column loops that read them, so
  // that each is computed once per row and stays in scope.
  SmallVector<Value> worklist{value};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    if (!seen.insert(next).second || !isTensor(next))
      continue;
    if (f.model.kindOf(next) == ValueKind::RowValue) {
      (void)rowValue(next);
      continue;
    }
    if (Operation *def = next.getDefiningOp())
      if (!isa<ReduceOp>(def) || f.model.kindOf(next) != ValueKind::AcrossRows)
        llvm::append_range(worklist, def->getOperands());
    if (auto reduce = next.getDefiningOp<ReduceOp>())
      if (Value init = reduce.getInit())
        worklist.push_back(init);
  }
}

//===----------------------------------------------------------------------===//
// Element values
//===----------------------------------------------------------------------===//

Value PointEmitter::acrossRowsTotal(ReduceOp reduce, Value col) {
  // The finalize summed the partials at this thread's column (sumPartials)
  // before any thread branched on its column.
  Value total = acrossRowsTotals.lookup(reduce);
  assert(total && "cross-row total read before sumPartials");
  if (reduce.getKind() == ReductionKind::Mean)
    total = arith::DivFOp::create(b, loc, total, f.indexToF32(f.rows));
  if (Value acc = reduce.getInit())
    total = f.combine(reduce.getKind(), elementAt(acc, col), total);
  return total;
}

void PointEmitter::prefetch(Value value, Value base) {
  // Evaluated lazily, a chunk issues its second load only after the math
  // on its first: one load in flight per thread, and the warps stall on
  // memory latency (ncu: SwiGLU's forward at 0.63 of DRAM bandwidth). All
  // loads first keeps every load of the chunk in flight together.
  for (BlockArgument input : f.model.inputsAtColumn(value))
    (void)group(input, base);
}

Lanes PointEmitter::loadGroup(Value buffer, Value at) {
  if (laneCount == 1)
    return {memref::LoadOp::create(b, loc, buffer, ValueRange{at})};
  return extractLanes(loadVector(buffer, at));
}

Value PointEmitter::loadVector(Value buffer, Value at) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  return vector::LoadOp::create(b, loc, VectorType::get({laneCount}, element),
                                buffer, ValueRange{at},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
}

Lanes PointEmitter::extractLanes(Value vector) {
  Lanes values;
  for (int64_t l = 0; l < laneCount; ++l)
    values.push_back(vector::ExtractOp::create(b, loc, vector, l));
  return values;
}

void PointEmitter::storeGroup(ArrayRef<Value> values, Value buffer, Value at) {
  if (values.size() == 1) {
    memref::StoreOp::create(b, loc, values[0], buffer, ValueRange{at});
    return;
  }
  auto type = VectorType::get({static_cast<int64_t>(values.size())},
                              values[0].getType());
  Value vector = vector::FromElementsOp::create(b, loc, type, values);
  vector::StoreOp::create(b, loc, vector, buffer, ValueRange{at},
                          /*nontemporal=*/false, llvm::MaybeAlign(16));
}

void PointEmitter::forgetComputed(bool columns) {
  // (Erasing from a DenseMap leaves its other iterators valid.)
  for (auto it = elementMemo.begin(); it != elementMemo.end(); ++it)
    if (!isa<BlockArgument>(it->first.first) ||
        (columns && f.model.kindOf(it->first.first) == ValueKind::Column))
      elementMemo.erase(it);
}

Lanes PointEmitter::branch(Value condition, function_ref<Lanes()> then,
                           function_ref<Lanes()> otherwise, Type type) {
  SmallVector<Type> types(laneCount, type);
  auto ifOp = scf::IfOp::create(b, loc, types, condition,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  {
    MemoScope scope(*this);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, loc, ValueRange(then()));
  }
  MemoScope scope(*this);
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, ValueRange(otherwise()));
  return Lanes(ifOp.getResults().begin(), ifOp.getResults().end());
}

Lanes PointEmitter::group(Value value, Value base) {
  if (!isTensor(value))
    return Lanes(laneCount, uniformValue(value));
  ValueKind kind = f.model.kindOf(value);
  if (kind == ValueKind::RowValue)
    return Lanes(laneCount, rowValue(value));
  auto key = std::make_pair(value, base);
  if (auto known = elementMemo.find(key); known != elementMemo.end())
    return known->second;
  // A value shared under column shifts (concat, slice, pad) is evaluated
  // once per shift: a DAG of shared concats doubles with each level. Past
  // the budget, emission stops and emit() reports it.
  if (++evaluations > maxEvaluations) {
    Type type = elementTypeOf(value);
    return Lanes(laneCount,
                 arith::ConstantOp::create(b, loc, b.getZeroAttr(type)));
  }

  Lanes result;
  if (auto constant = f.model.tableOf(value)) {
    Value at = base;
    if (kind == ValueKind::Element)
      at = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, rowIndex, widthOf(value)),
          base);
    result = loadGroup(constantTable(constant), at);
  } else if (auto arg = dyn_cast<BlockArgument>(value)) {
    Value at = base;
    if (kind == ValueKind::Element)
      at = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, rowIndex, widthOf(arg)), base);
    result = loadGroup(f.pointers.lookup(arg), at);
  } else {
    Operation *def = value.getDefiningOp();
    if (auto reduce = dyn_cast<ReduceOp>(def)) {
      result = {acrossRowsTotal(reduce, base)};
    } else if (auto iota = dyn_cast<IotaOp>(def)) {
      // Each lane's column.
      for (int64_t l = 0; l < laneCount; ++l)
        result.push_back(
            convert(arith::AddIOp::create(b, loc, base, f.index(l)),
                    elementTypeOf(iota.getResult())));
    } else if (auto test = dyn_cast<arith::CmpFOp>(def);
               test && isColumnTest(test)) {
      result = columnTest(test, base);
    } else if (auto swap = dyn_cast<SwapHalvesOp>(def);
               swap && blockWithinGroup(swap, laneCount)) {
      // The partners are lanes of the same group (the interleaved pairs
      // of RoPE's GPT-J layout: neighbours), traded in registers. Read a
      // half block away instead, the group would be a misaligned load, so
      // that the whole kernel took the scalar path (GLM-4's RoPE at half
      // the bandwidth of the rotate-half one).
      // (The alignment test asked the same of the vector width.)
      assert(laneCount == f.schedule.vectorWidth);
      Lanes input = group(swap.getInput(), base);
      int64_t half = *blockWithinGroup(swap, laneCount) / 2;
      for (int64_t l = 0; l < laneCount; ++l)
        result.push_back(input[l % (2 * half) < half ? l + half : l - half]);
    } else if (Value column = inputColumn(def, base)) {
      result = group(def->getOperand(0), column);
    } else if (auto pad = dyn_cast<PadOp>(def)) {
      // With vectors, pad offsets and widths are multiples of the width, so
      // a group is wholly inside or outside: one test covers its lanes.
      Value offset = uniformValue(pad.getOffset());
      Value end =
          arith::AddIOp::create(b, loc, offset, widthOf(pad.getInput()));
      Value inside = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, base,
                                offset),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, base, end));
      Type type = elementTypeOf(value);
      result = branch(
          inside,
          [&] {
            return group(pad.getInput(),
                         arith::SubIOp::create(b, loc, base, offset));
          },
          [&] {
            Value zero = arith::ConstantOp::create(b, loc, type,
                                                   b.getFloatAttr(type, 0.0));
            return Lanes(laneCount, zero);
          },
          type);
    } else if (auto concat = dyn_cast<ConcatOp>(def)) {
      result = emitConcat(concat.getInputs(), base);
    } else if (auto select = dyn_cast<arith::SelectOp>(def);
               select && !isTensor(select.getCondition())) {
      // A whole-tensor choice made by a parameter (cross_entropy's
      // soft-cap on or off): a branch every thread takes alike, so that
      // the side not chosen costs nothing (computed as an elementwise
      // select, both sides ran at every column).
      result = branch(
          uniformValue(select.getCondition()),
          [&] { return group(select.getTrueValue(), base); },
          [&] { return group(select.getFalseValue(), base); },
          elementTypeOf(value));
    } else {
      SmallVector<Lanes> operands;
      // As in rowValue: nothing is loaded for a shape alone.
      for (OpOperand &use : def->getOpOperands())
        operands.push_back(readsOnlyShape(use) ? Lanes(laneCount, Value())
                                               : group(use.get(), base));
      for (int64_t l = 0; l < laneCount; ++l) {
        SmallVector<Value> laneOperands;
        for (Lanes &operand : operands)
          laneOperands.push_back(operand[l]);
        result.push_back(emitScalarOp(def, laneOperands));
      }
    }
  }
  elementMemo[key] = result;
  return result;
}

Value PointEmitter::inputColumn(Operation *def, Value base) {
  if (isa<BroadcastOp>(def))
    return base;
  if (auto slice = dyn_cast<SliceOp>(def))
    return arith::AddIOp::create(b, loc, base, uniformValue(slice.getOffset()));
  // With vectors the repeated width is a multiple of the vector width, so
  // a group lies inside one repeat.
  if (auto repeat = dyn_cast<RepeatOp>(def))
    return arith::RemUIOp::create(b, loc, base, widthOf(repeat.getInput()));
  // With vectors half a block is a multiple of the vector width, so a group
  // lies inside one half and its partner inside the other.
  if (auto swap = dyn_cast<SwapHalvesOp>(def)) {
    Value half = halfBlock(swap);
    Value inFirstHalf = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult,
        arith::RemUIOp::create(b, loc, base, uniformValue(swap.getBlock())),
        half);
    return arith::SelectOp::create(b, loc, inFirstHalf,
                                   arith::AddIOp::create(b, loc, base, half),
                                   arith::SubIOp::create(b, loc, base, half));
  }
  return {};
}

std::optional<int64_t> PointEmitter::blockWithinGroup(SwapHalvesOp swap,
                                                      int64_t lanes) {
  // Groups start at multiples of `lanes` on the vector path (the test
  // above), so a constant block that divides `lanes` never straddles one.
  APInt block;
  if (lanes > 1 && matchPattern(swap.getBlock(), m_ConstantInt(&block)) &&
      block.getSExtValue() >= 2 && lanes % block.getSExtValue() == 0)
    return block.getSExtValue();
  return std::nullopt;
}

Value PointEmitter::halfBlock(SwapHalvesOp swap) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  return arith::ShRUIOp::create(b, loc, uniformValue(swap.getBlock()), one);
}

Lanes PointEmitter::emitConcat(ValueRange inputs, Value base) {
  if (inputs.size() == 1)
    return group(inputs.front(), base);
  Value width = widthOf(inputs.front());
  Value inFirst =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, base, width);
  return branch(
      inFirst, [&] { return group(inputs.front(), base); },
      [&] {
        return emitConcat(inputs.drop_front(),
                          arith::SubIOp::create(b, loc, base, width));
      },
      elementTypeOf(inputs.front()));
}
