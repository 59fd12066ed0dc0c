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

#include "Emitter.h"

#include "tile/Dialect/Tile/IR/KernelSchedule.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

namespace {
/// Kernel buffers are flat memrefs of a static, unreachable size: the
/// bare-pointer convention passes one pointer per buffer but only for static
/// shapes, and the real sizes arrive as parameters.
constexpr int64_t kFlatSize = int64_t(1) << 40;

/// Whether the kernel returns a value summed across rows (or per column),
/// which the finalize kernel writes.
bool hasFinalize(const KernelModel &model) {
  func::FuncOp func = model.func;
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  return llvm::any_of(returnOp.getOperands(), [&](Value v) {
    ValueKind kind = model.kindOf(v);
    return kind == ValueKind::AcrossRows || kind == ValueKind::Column;
  });
}

MemRefType flatBuffer(Type elementType) {
  return MemRefType::get({kFlatSize}, elementType);
}
} // namespace

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
  // The row kernel exchanges values per warp (rowSharedFloats); the
  // finalize one per thread (its warps' sums of the partial rows).
  int64_t sharedFloats =
      mode == Mode::Rows ? rowSharedFloats(schedule.threads) : schedule.threads;
  auto sharedType = MemRefType::get(
      {sharedFloats}, b.getF32Type(), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(),
                                 gpu::GPUDialect::getWorkgroupAddressSpace()));
  kernel = gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(params, {}),
                                  TypeRange{sharedType});
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  // known_block_size becomes `.maxntid`, under which ptxas caps the
  // registers to keep more CTAs resident; it spilled the vectorized pad and
  // concat branches of silu_and_mul's backward (8 bytes at 64 registers).
  // So it is set only where it is needed: above 256 threads, for the CTA to
  // launch at all (65536 registers per SM: 128 per thread at 512 threads),
  // and on a persistent row kernel, with the CTAs per SM its grid was sized
  // for (`.minnctapersm`), so that the whole grid is resident at once.
  bool persistent = mode == Mode::Rows && schedule.ctas;
  if (schedule.threads > 256 || persistent)
    kernel.setKnownBlockSizeAttr(
        b.getDenseI32ArrayAttr({static_cast<int32_t>(schedule.threads), 1, 1}));
  if (persistent)
    kernel->setAttr("nvvm.minctasm",
                    b.getI32IntegerAttr(schedule.gridCtasPerSm()));
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
  // Widths the JIT specialized for are constants: loop bounds, offsets and
  // the alignment test fold. The parameters stay, so the call is the same.
  if (auto specialized = func->getAttrOfType<DictionaryAttr>(
          TileDialect::getSpecializeAttrName()))
    for (NamedAttribute entry : specialized) {
      // `w<i>`, checked by the dialect's attribute verifier.
      unsigned index = 0;
      (void)entry.getName().getValue().drop_front(1).getAsInteger(10, index);
      argWidths[func.getArgument(index)] = arith::ConstantIndexOp::create(
          b, loc, cast<IntegerAttr>(entry.getValue()).getInt());
    }
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  threads = index(schedule.threads);
  if (schedule.rowsPerCta == 1) {
    member = tid;
    groupSize = threads;
    rowGroup = index(0);
  } else {
    groupSize = index(schedule.threads / schedule.rowsPerCta);
    member = arith::RemUIOp::create(b, loc, tid, groupSize);
    rowGroup = arith::DivUIOp::create(b, loc, tid, groupSize);
  }
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
      assert(isKernelOp(&op) && "an op outside KernelOps.def reached the "
                                "emitter");
      Operation *clone = b.clone(op);
      clone->setOperands(operands);
      uniform.map(op.getResults(), clone->getResults());
      continue;
    }
    for (Value result : op.getResults())
      if (model.kindOf(result) != ValueKind::RowValue)
        (void)widthOf(result);
  }
  if (schedule.vectorWidth > 1 && mode == Mode::Rows)
    aligned = computeAlignment();
  // Workspace slots per cross-row reduction: a [ctas, width] block of CTA
  // partials, which the finalize sums; with several rows per CTA, then a
  // [ctas * rowsPerCta, width] block where the looped body keeps a row per
  // group (the resident body keeps its group partials in registers).
  Value offset = index(0);
  for (ReduceOp reduce : model.acrossRowReductions) {
    Value size = arith::MulIOp::create(b, loc, ctas, widthOf(reduce));
    workspaceBase[reduce] = offset;
    offset = arith::AddIOp::create(b, loc, offset, size);
    if (schedule.rowsPerCta == 1)
      continue;
    scratchBase[reduce] = offset;
    offset = arith::AddIOp::create(
        b, loc, offset,
        arith::MulIOp::create(b, loc, size, index(schedule.rowsPerCta)));
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

Value Emitter::widenFromWord(Value vector, int64_t lane, Type to, bool opaque) {
  // The lane is cut out of its word after an xor with a zero that neither
  // LLVM nor ptxas can prove is zero: the row count's sign, spread over
  // all bits, so that no bit of it is known to either. Without it, both
  // fold the cut into the first pass's extraction of the same lane and
  // keep that pass's widened value alive across the exchange instead of
  // the word (ptxas, RMSNorm's f16 forward at 16384 columns: 144
  // registers; with it, 85).
  if (opaque && !opaqueZero) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&kernel.getBody().front());
    Value sign = arith::ShRSIOp::create(b, loc, rows, index(63));
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

Value Emitter::andOf(Value a, Value c) {
  if (!a)
    return c;
  if (!c)
    return a;
  return arith::AndIOp::create(b, loc, a, c);
}

void Emitter::combineInto(ReductionKind kind, Lanes &into,
                          ArrayRef<Value> values) {
  for (auto [sum, value] : llvm::zip(into, values))
    sum = combine(kind, sum, value);
}

Value Emitter::workspaceAt(Value base, Value partialRow, Value width,
                           Value col) {
  return arith::AddIOp::create(
      b, loc, base,
      arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, partialRow, width), col));
}

Value Emitter::indexToF32(Value value) {
  Value asInt = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), value);
  return arith::UIToFPOp::create(b, loc, b.getF32Type(), asInt);
}

Value Emitter::emitScalarOp(Operation *op, ArrayRef<Value> operands) {
  if (auto sigmoid = dyn_cast<SigmoidOp>(op)) {
    Value e =
        math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, operands[0]));
    // 1 / (1 + e) as rcp.approx (afn), not the IEEE rcp.rn, which ptxas
    // expands into a Newton step and a slow path: SwiGLU's forward at
    // 11008 columns and 512 threads went from 89 to 40 registers. The
    // approximation is within 1 ulp; the inputs are f32 sums of bf16/f16
    // or f32 values with tolerances far above that.
    auto quotient = arith::DivFOp::create(
        b, loc, f32(1.0), arith::AddFOp::create(b, loc, f32(1.0), e));
    quotient.setFastmath(arith::FastMathFlags::afn);
    return quotient;
  }
  if (auto cast = dyn_cast<CastOp>(op))
    return convert(operands[0], elementTypeOf(cast.getResult()));
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

Value Emitter::constantTable(arith::ConstantOp constant) {
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
  std::string name =
      (kernel.getName() + "_constant_" + std::to_string(constantTables.size()))
          .str();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(kernel);
    memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"),
                             memoryType, dense.reshape(flatType),
                             /*constant=*/true, b.getI64IntegerAttr(16));
    b.setInsertionPointToStart(&kernel.getBody().front());
    table = memref::GetGlobalOp::create(b, loc, memoryType, name);
  }
  return table;
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

SmallVector<Value> Emitter::blockReduce(ArrayRef<ReductionKind> kinds,
                                        SmallVector<Value> values) {
  // Within each warp by shuffles, then across warps through shared memory,
  // read back by every thread in the same order: the results are uniform
  // and the same on every run. Consecutive exchanges alternate between two
  // sets of slots, so one barrier suffices: a thread writes a set again
  // only after the barrier of the exchange in between, which every thread
  // reaches after reading that set.
  assert(values.size() <= static_cast<size_t>(kMaxFusedReductions));
  assert(rowParity && "an exchange outside the row loop");
  for (int32_t offset = 16; offset >= 1; offset /= 2)
    for (auto [kind, value] : llvm::zip(kinds, values)) {
      Value other = gpu::ShuffleOp::create(b, loc, value, offset, 32,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      value = combine(kind, value, other);
    }
  int64_t ctaWarps = schedule.threads / 32;
  Value parity = exchangesInRow++ % 2 == 0
                     ? rowParity
                     : arith::XOrIOp::create(b, loc, rowParity, index(1));
  Value set = arith::MulIOp::create(b, loc, parity,
                                    index(kMaxFusedReductions * ctaWarps));
  Value lane = arith::RemUIOp::create(b, loc, tid, index(32));
  Value warp = arith::DivUIOp::create(b, loc, tid, index(32));
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
  auto store = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    for (auto [j, value] : llvm::enumerate(values)) {
      Value at = arith::AddIOp::create(
          b, loc, arith::AddIOp::create(b, loc, set, warp),
          index(static_cast<int64_t>(j) * ctaWarps));
      memref::StoreOp::create(b, loc, value, shared, ValueRange{at});
    }
  }
  gpu::BarrierOp::create(b, loc);
  // The warps of this row's group: all of them with one row per CTA.
  int64_t warps = ctaWarps / schedule.rowsPerCta;
  Value groupWarps =
      schedule.rowsPerCta == 1
          ? set
          : arith::AddIOp::create(
                b, loc, set,
                arith::MulIOp::create(b, loc, rowGroup, index(warps)));
  SmallVector<Value> totals;
  for (auto [j, kind] : llvm::enumerate(kinds)) {
    auto slot = [&, j = j](int64_t w) -> Value {
      return arith::AddIOp::create(
          b, loc, groupWarps, index(static_cast<int64_t>(j) * ctaWarps + w));
    };
    Value total = memref::LoadOp::create(b, loc, shared, ValueRange{slot(0)});
    for (int64_t w = 1; w < warps; ++w)
      total =
          combine(kind, total,
                  memref::LoadOp::create(b, loc, shared, ValueRange{slot(w)}));
    totals.push_back(total);
  }
  return totals;
}

Value Emitter::finishRow() {
  // After an odd count the next row starts on the other set. (With an even
  // count the parity stays 0, and the set offsets fold to constants.)
  Value next = exchangesInRow % 2 == 0
                   ? rowParity
                   : arith::XOrIOp::create(b, loc, rowParity, index(1));
  exchangesInRow = 0;
  rowParity = Value();
  return next;
}

void Emitter::stridedLoop(Value start, Value end, Value stride,
                          function_ref<void(Value)> body) {
  auto loop = scf::ForOp::create(b, loc, start, end, stride);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  auto saved = elementMemo;
  body(loop.getInductionVar());
  elementMemo = std::move(saved);
}

void Emitter::columnLoop(Value end, function_ref<void(Value)> body) {
  int64_t width = schedule.vectorWidth;
  Value tail;
  if (width > 1 && mode == Mode::Rows) {
    Value vector = index(width);
    Value groups = arith::DivUIOp::create(b, loc, end, vector);
    auto branch = scf::IfOp::create(b, loc, aligned, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      lanes = width;
      stridedLoop(member, groups, groupSize, [&](Value g) {
        body(arith::MulIOp::create(b, loc, g, vector));
      });
      lanes = 1;
    }
    Value vectorized = arith::MulIOp::create(b, loc, groups, vector);
    tail = arith::SelectOp::create(b, loc, aligned, vectorized, index(0));
  }
  Value first = mode == Mode::Rows ? member : tid;
  Value step = mode == Mode::Rows ? groupSize : threads;
  Value start = width > 1 && mode == Mode::Rows
                    ? Value(arith::AddIOp::create(b, loc, tail, first))
                    : first;
  stridedLoop(start, end, step, body);
}

Value Emitter::computeAlignment() {
  // Rows go `lanes` at a time only if every buffer is 16-byte aligned and
  // every row, slice and pad starts at a multiple of the vector width.
  Value ok = arith::ConstantIntOp::create(b, loc, 1, 1);
  auto both = [&](Value condition) {
    ok = arith::AndIOp::create(b, loc, ok, condition);
  };
  auto multipleOf = [&](Value value, int64_t n) {
    Value rem = arith::RemUIOp::create(b, loc, value, index(n));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem,
                                 index(0));
  };
  // Per-row buffers are read and written one value per row: exempt. Every
  // other argument's width joins the widths tested below, read by an op or
  // not: a kernel may copy an argument to a result with no op between (the
  // GPU differential check found `return %arg2, %arg0` taking the vector
  // path at width 13: a misaligned 16-byte load).
  SmallVector<Value> buffers;
  for (auto [arg, pointer] : pointers)
    if (model.kindOf(arg) != ValueKind::RowValue) {
      buffers.push_back(pointer);
      (void)widthOf(arg);
    }
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [result, pointer] :
       llvm::zip(returnOp.getOperands(), resultPointers))
    if (model.kindOf(result) != ValueKind::RowValue)
      buffers.push_back(pointer);
  buffers.push_back(workspace);
  for (Value buffer : buffers) {
    Value address =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
    both(multipleOf(address, 16));
  }
  int64_t width = schedule.vectorWidth;
  // An element grid's chunks start at multiples of the vector width of the
  // flattened tensors, whatever the rows' width.
  if (!schedule.elementGrid)
    for (auto [value, w] : widths)
      if (w)
        both(multipleOf(w, width));
  for (Operation &op : func.getBody().front()) {
    if (auto slice = dyn_cast<SliceOp>(op))
      both(multipleOf(uniformValue(slice.getOffset()), width));
    if (auto pad = dyn_cast<PadOp>(op))
      both(multipleOf(uniformValue(pad.getOffset()), width));
  }
  return ok;
}

bool Emitter::inputsReduced(Value value) {
  SmallVector<Value> worklist{value};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    if (!seen.insert(next).second || !isTensor(next) || rowMemo.count(next))
      continue;
    Operation *def = next.getDefiningOp();
    if (!def)
      continue;
    if (isa<ReduceOp>(def) && model.kindOf(next) == ValueKind::RowValue)
      return false;
    llvm::append_range(worklist, def->getOperands());
  }
  return true;
}

Value Emitter::reduceRow(ReduceOp reduce) {
  // Every row reduction whose inputs are ready joins this one, so that
  // independent reductions (RMSNorm's backward has two) share one exchange.
  prepareRowValues(reduce.getInput());
  // A joining reduction's init must be ready too, so that no init reads a
  // reduction of the same exchange before it is complete.
  SmallVector<ReduceOp> together{reduce};
  for (ReduceOp other : model.rowReductions)
    if (static_cast<int64_t>(together.size()) < kMaxFusedReductions &&
        other != reduce && !rowMemo.count(other.getResult()) &&
        inputsReduced(other.getInput()) &&
        (!other.getInit() || inputsReduced(other.getInit())))
      together.push_back(other);
  SmallVector<ReductionKind> kinds;
  SmallVector<Value> folds;
  for (ReduceOp member : together) {
    if (member != reduce)
      prepareRowValues(member.getInput());
    kinds.push_back(member.getKind());
    folds.push_back(residentChunks.empty() ? foldLooped(member)
                                           : foldResident(member));
  }
  SmallVector<Value> totals = blockReduce(kinds, std::move(folds));
  // `reduce` last: its init may read the others.
  for (size_t i = together.size(); i-- > 0;) {
    ReduceOp member = together[i];
    Value total = totals[i];
    if (member.getKind() == ReductionKind::Mean)
      total = arith::DivFOp::create(b, loc, total,
                                    indexToF32(widthOf(member.getInput())));
    if (Value init = member.getInit())
      total = combine(member.getKind(), rowValue(init), total);
    rowMemo[member.getResult()] = total;
  }
  return rowMemo.lookup(reduce.getResult());
}

Value Emitter::foldLooped(ReduceOp reduce) {
  // Each thread folds its columns into one accumulator; a vector group is
  // folded lane by lane, so the order is fixed for a given width.
  Value input = reduce.getInput();
  Type f32Type = b.getF32Type();
  Value acc = identity(reduce.getKind(), f32Type);
  auto fold = [&](Value start, Value end, Value stride, int64_t width) {
    auto loop = scf::ForOp::create(b, loc, start, end, stride, ValueRange{acc});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    auto saved = elementMemo;
    lanes = width;
    Value base = loop.getInductionVar();
    if (width > 1)
      base = arith::MulIOp::create(b, loc, base, index(width));
    Value total = loop.getRegionIterArg(0);
    prefetch(input, base);
    for (Value element : group(input, base))
      total = combine(reduce.getKind(), total, element);
    lanes = 1;
    scf::YieldOp::create(b, loc, total);
    elementMemo = std::move(saved);
    return loop.getResult(0);
  };
  Value end = widthOf(input);
  Value tail;
  int64_t width = schedule.vectorWidth;
  if (width > 1) {
    Value groups = arith::DivUIOp::create(b, loc, end, index(width));
    Value vectorGroups =
        arith::SelectOp::create(b, loc, aligned, groups, index(0));
    acc = fold(member, vectorGroups, groupSize, width);
    tail = arith::MulIOp::create(b, loc, vectorGroups, index(width));
  }
  Value start =
      width > 1 ? Value(arith::AddIOp::create(b, loc, tail, member)) : member;
  return fold(start, end, groupSize, 1);
}

Value Emitter::foldResident(ReduceOp reduce) {
  // The chunks in the looped body's order, lane by lane: the same sum. The
  // values stay in the memo, so a later pass over the row reuses them
  // instead of loading the row again.
  Value acc = identity(reduce.getKind(), b.getF32Type());
  for (const Chunk &chunk : residentChunks) {
    Value none =
        chunk.valid ? identity(reduce.getKind(), b.getF32Type()) : Value();
    for (Value element : group(reduce.getInput(), chunk.base)) {
      if (chunk.valid)
        element = arith::SelectOp::create(b, loc, chunk.valid, element, none);
      acc = combine(reduce.getKind(), acc, element);
    }
  }
  return acc;
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
  } else if (auto constant = model.tableOf(value)) {
    result = memref::LoadOp::create(b, loc, constantTable(constant),
                                    ValueRange{row});
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
  // The finalize summed the partials at this thread's column (sumPartials)
  // before any thread branched on its column.
  Value total = finalizeTotals.lookup(reduce);
  assert(total && "cross-row total read before sumPartials");
  if (reduce.getKind() == ReductionKind::Mean)
    total = arith::DivFOp::create(b, loc, total, indexToF32(rows));
  if (Value acc = reduce.getInit())
    total = combine(reduce.getKind(), elementAt(acc, col), total);
  return total;
}

SmallVector<BlockArgument> Emitter::inputsAtColumn(Value value) {
  // Only inputs read at the column itself (through elementwise ops, casts
  // and broadcasts); slices, pads and concats shift or guard the column and
  // load where they are evaluated.
  SmallVector<Value> worklist{value};
  llvm::DenseSet<Value> seen;
  SmallVector<BlockArgument> inputs;
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    if (!seen.insert(next).second || !isTensor(next))
      continue;
    ValueKind kind = model.kindOf(next);
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

void Emitter::prefetch(Value value, Value base) {
  // Evaluated lazily, a chunk issues its second load only after the math
  // on its first: one load in flight per thread, and the warps stall on
  // memory latency (ncu: SwiGLU's forward at 0.63 of DRAM bandwidth). All
  // loads first keeps every load of the chunk in flight together.
  for (BlockArgument input : inputsAtColumn(value))
    (void)group(input, base);
}

Lanes Emitter::loadGroup(Value buffer, Value at) {
  if (lanes == 1)
    return {memref::LoadOp::create(b, loc, buffer, ValueRange{at})};
  return extractLanes(loadVector(buffer, at));
}

Value Emitter::loadVector(Value buffer, Value at) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  return vector::LoadOp::create(b, loc, VectorType::get({lanes}, element),
                                buffer, ValueRange{at},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
}

Lanes Emitter::extractLanes(Value vector) {
  Lanes values;
  for (int64_t l = 0; l < lanes; ++l)
    values.push_back(vector::ExtractOp::create(b, loc, vector, l));
  return values;
}

void Emitter::storeGroup(ArrayRef<Value> values, Value buffer, Value at) {
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

Lanes Emitter::branch(Value condition, function_ref<Lanes()> then,
                      function_ref<Lanes()> otherwise, Type type) {
  SmallVector<Type> types(lanes, type);
  auto ifOp = scf::IfOp::create(b, loc, types, condition,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  auto saved = elementMemo;
  b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(b, loc, ValueRange(then()));
  elementMemo = saved;
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, ValueRange(otherwise()));
  elementMemo = std::move(saved);
  return Lanes(ifOp.getResults().begin(), ifOp.getResults().end());
}

Lanes Emitter::group(Value value, Value base) {
  if (!isTensor(value))
    return Lanes(lanes, uniformValue(value));
  ValueKind kind = model.kindOf(value);
  if (kind == ValueKind::RowValue)
    return Lanes(lanes, rowValue(value));
  auto key = std::make_pair(value, base);
  if (auto known = elementMemo.find(key); known != elementMemo.end())
    return known->second;
  // A value shared under column shifts (concat, slice, pad) is evaluated
  // once per shift: a DAG of shared concats doubles with each level. Past
  // the budget, emission stops and emit() reports it.
  if (++evaluations > maxEvaluations) {
    Type type = elementTypeOf(value);
    return Lanes(lanes, arith::ConstantOp::create(b, loc, b.getZeroAttr(type)));
  }

  Lanes result;
  if (auto constant = model.tableOf(value)) {
    Value at = base;
    if (kind == ValueKind::Element)
      at = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, row, widthOf(value)), base);
    result = loadGroup(constantTable(constant), at);
  } else if (auto arg = dyn_cast<BlockArgument>(value)) {
    Value at = base;
    if (kind == ValueKind::Element)
      at = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, row, widthOf(arg)), base);
    result = loadGroup(pointers.lookup(arg), at);
  } else {
    Operation *def = value.getDefiningOp();
    if (auto reduce = dyn_cast<ReduceOp>(def)) {
      result = {acrossRowsTotal(reduce, base)};
    } else if (auto broadcast = dyn_cast<BroadcastOp>(def)) {
      result = group(broadcast.getInput(), base);
    } else if (auto slice = dyn_cast<SliceOp>(def)) {
      Value shifted =
          arith::AddIOp::create(b, loc, base, uniformValue(slice.getOffset()));
      result = group(slice.getInput(), shifted);
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
            return Lanes(lanes, zero);
          },
          type);
    } else if (auto concat = dyn_cast<ConcatOp>(def)) {
      result = emitConcat(concat.getInputs(), base);
    } else {
      SmallVector<Lanes> operands;
      for (Value operand : def->getOperands())
        operands.push_back(group(operand, base));
      for (int64_t l = 0; l < lanes; ++l) {
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

Lanes Emitter::emitConcat(ValueRange inputs, Value base) {
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

LogicalResult Emitter::emit() {
  createKernel();
  // The finalize is launched with programmatic stream serialization (the
  // manifest's `overlaps_previous`): its launch overlaps the row kernel's
  // last CTAs, and its threads wait here, before any load, until the row
  // kernel is complete and its partials are visible (launched plainly, the
  // wait returns at once). The row kernel does not signal earlier than its
  // CTAs' exit (griddepcontrol.launch_dependents at its start cost the
  // RMSNorm backward 2 us where the row kernel holds two CTAs per SM:
  // docs/Performance.md).
  if (mode == Mode::Finalize)
    NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::wait);
  if (failed(emitPrologue()))
    return failure();
  if (mode == Mode::Rows)
    emitRowBody();
  else
    emitFinalizeBody();
  if (evaluations > maxEvaluations)
    return func.emitOpError("is too large to lower: its values at a column "
                            "take more than ")
           << maxEvaluations
           << " evaluations (a value shared under concat, slice or pad is "
              "evaluated once per column shift)";
  b.setInsertionPointToEnd(&kernel.getBody().front());
  gpu::ReturnOp::create(b, loc);
  return success();
}

LogicalResult gpu_lowering::emitKernels(const KernelModel &model,
                                        const Schedule &schedule,
                                        gpu::GPUModuleOp module) {
  func::FuncOp func = model.func;
  if (schedule.rowsPerCta < 1 ||
      schedule.threads % (32 * schedule.rowsPerCta) != 0)
    return func.emitOpError("rows per CTA must divide the threads into "
                            "groups of whole warps, not ")
           << schedule.rowsPerCta << " rows of " << schedule.threads
           << " threads";
  if (schedule.threads % 32 != 0 || schedule.threads < 32 ||
      schedule.threads > 1024)
    return func.emitOpError("threads per CTA must be a multiple of 32 "
                            "between 32 and 1024, not ")
           << schedule.threads;
  // tile.schedule's verifier checks this where the attribute is written;
  // a schedule passed in directly is checked here.
  if (schedule.elementGrid && !isPurelyElementwise(func))
    return func.emitOpError("grid = \"elements\" needs a purely elementwise "
                            "kernel");
  if (failed(Emitter(model, schedule, Mode::Rows, module).emit()))
    return failure();
  if (hasFinalize(model))
    return Emitter(model, schedule, Mode::Finalize, module).emit();
  return success();
}
