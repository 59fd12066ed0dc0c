//===- KernelPlan.cpp - what the lowering decides for a kernel -----------===//
//
// Every decision here is made from the kernel model and the schedule alone,
// without building IR, so that the emitters and the manifest read one
// answer (KernelPlan.h).
//
//===----------------------------------------------------------------------===//

#include "KernelPlan.h"

#include "tile/Dialect/Tile/IR/KernelVerifier.h"

#include "mlir/IR/Matchers.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

//===----------------------------------------------------------------------===//
// Width classes
//===----------------------------------------------------------------------===//

WidthClasses::WidthClasses(const KernelModel &model) : model(model) {
  func::FuncOp func = model.func;
  for (auto [index, width] : getSpecializedWidths(func))
    specialized[index] = width;
  // Values the launcher checks to be equally wide (the manifest states
  // every sameWidthValues as a constraint) are one class, so that the
  // emitter may treat them as one width.
  for (Operation &op : func.getBody().front()) {
    SmallVector<Value> same = model.sameWidthValues(op);
    for (size_t i = 1; i < same.size(); ++i)
      classes.unionSets(sourceOf(same[0]), sourceOf(same[i]));
  }
}

Value WidthClasses::sourceOf(Value value) const {
  // A chain of SameAs rules is as long as the kernel: walked, not recursed,
  // and every value on the way remembers the answer.
  SmallVector<Value> path;
  Value source;
  while (!source) {
    if (Value known = sources.lookup(value)) {
      source = known;
      break;
    }
    path.push_back(value);
    WidthRule rule = model.widthRule(value);
    auto dim = rule.kind == WidthRule::Kind::Size
                   ? rule.value.getDefiningOp<tensor::DimOp>()
                   : tensor::DimOp();
    if (rule.kind == WidthRule::Kind::SameAs)
      value = rule.value;
    else if (dim && !model.dimReadsRows(dim))
      value = dim.getSource();
    else
      source = rule.kind == WidthRule::Kind::Size ? rule.value : value;
  }
  for (Value visited : path)
    sources[visited] = source;
  return source;
}

std::optional<int64_t> WidthClasses::constantOf(Value source) const {
  if (auto arg = dyn_cast<BlockArgument>(source)) {
    if (auto it = specialized.find(arg.getArgNumber()); it != specialized.end())
      return it->second;
    return std::nullopt;
  }
  if (!isTensor(source))
    return source.getType().isIndex() ? constantIndex(source) : std::nullopt;
  WidthRule rule = model.widthRule(source);
  if (rule.kind == WidthRule::Kind::Constant)
    return rule.constant;
  return std::nullopt;
}

std::optional<int64_t> WidthClasses::constantIndex(Value index,
                                                   int depth) const {
  APInt constant;
  if (matchPattern(index, m_ConstantInt(&constant)))
    return constant.getSExtValue();
  // The width of an argument the JIT specialized (not a row count).
  if (auto dim = index.getDefiningOp<tensor::DimOp>()) {
    auto arg = dyn_cast<BlockArgument>(dim.getSource());
    if (!arg || model.dimReadsRows(dim))
      return std::nullopt;
    auto it = specialized.find(arg.getArgNumber());
    return it == specialized.end() ? std::nullopt
                                   : std::optional<int64_t>(it->second);
  }
  // Arithmetic on those (silu_and_mul's halves: width / 2), a few levels
  // deep: what a kernel computes its slices' sizes with.
  Operation *op = index.getDefiningOp();
  if (!op || depth > 4 || op->getNumOperands() != 2 ||
      !isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivUIOp>(op))
    return std::nullopt;
  std::optional<int64_t> lhs = constantIndex(op->getOperand(0), depth + 1);
  std::optional<int64_t> rhs = constantIndex(op->getOperand(1), depth + 1);
  if (!lhs || !rhs || *lhs < 0 || *rhs < 0)
    return std::nullopt;
  if (isa<arith::AddIOp>(op))
    return *lhs + *rhs;
  if (isa<arith::SubIOp>(op))
    return *lhs >= *rhs ? std::optional<int64_t>(*lhs - *rhs) : std::nullopt;
  if (isa<arith::MulIOp>(op))
    return *lhs * *rhs;
  return *rhs == 0 ? std::nullopt : std::optional<int64_t>(*lhs / *rhs);
}

Value WidthClasses::loopBound(Value value) const {
  Value source = sourceOf(value);
  if (classes.contains(source))
    for (Value member : classes.members(source))
      if (constantOf(member))
        return member;
  return source;
}

//===----------------------------------------------------------------------===//
// The plan
//===----------------------------------------------------------------------===//

SmallVector<KernelPlan::Sink> KernelPlan::allSinks() const {
  SmallVector<Sink> sinks;
  for (const ColumnLoop &loop : columnLoops)
    llvm::append_range(sinks, loop.sinks);
  return sinks;
}

namespace {
LogicalResult checkSchedule(func::FuncOp func, const Schedule &schedule) {
  if (!validRowsPerCta(schedule.rowsPerCta, schedule.threads,
                       reducesAcrossRows(func)))
    return func.emitOpError("rows per CTA must divide the threads into "
                            "groups of whole warps (or, without a reduction "
                            "across rows, of a power of two below 32), not ")
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
  return success();
}

/// Whether `a` and `b` provably have equal widths: one class, or the same
/// constant (a width the JIT specialized).
bool sameWidth(const WidthClasses &widths, Value a, Value b) {
  if (widths.equal(a, b))
    return true;
  std::optional<int64_t> left = widths.constantOf(widths.loopBound(a));
  return left && left == widths.constantOf(widths.loopBound(b));
}

/// A result that is n ≥ 2 column ranges of one width: a concat whose inputs
/// provably share a width, under a cast and a pad at offset 0 that adds no
/// column (silu_and_mul's backward pads its concat to x's width, which is
/// the concat's when x's width is even). Returns an input of that width and
/// n, or nothing.
std::optional<std::pair<Value, int64_t>>
equalParts(Value result, const WidthClasses &widths) {
  Value value = result;
  if (auto cast = value.getDefiningOp<CastOp>())
    value = cast.getInput();
  PadOp pad = value.getDefiningOp<PadOp>();
  if (pad)
    value = pad.getInput();
  auto concat = value.getDefiningOp<ConcatOp>();
  if (!concat || concat.getInputs().size() < 2)
    return std::nullopt;
  Value first = concat.getInputs().front();
  if (!llvm::all_of(concat.getInputs(), [&](Value input) {
        return sameWidth(widths, first, input);
      }))
    return std::nullopt;
  auto parts = static_cast<int64_t>(concat.getInputs().size());
  if (pad) {
    APInt offset;
    std::optional<int64_t> part = widths.constantOf(widths.loopBound(first));
    std::optional<int64_t> whole =
        widths.constantOf(widths.loopBound(pad.getResult()));
    if (!matchPattern(pad.getOffset(), m_ConstantInt(&offset)) ||
        !offset.isZero() || !part || !whole || *whole != parts * *part)
      return std::nullopt;
  }
  return std::make_pair(first, parts);
}

/// The row kernel's column loops and per-row outputs.
void planOutputs(const KernelModel &model, const WidthClasses &widths,
                 KernelPlan &plan) {
  auto addSink = [&](Value width, KernelPlan::Sink sink) {
    for (KernelPlan::ColumnLoop &loop : plan.columnLoops)
      if (widths.equal(loop.width, width)) {
        loop.sinks.push_back(sink);
        return;
      }
    plan.columnLoops.push_back({width, {sink}});
  };
  func::FuncOp func = model.func;
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [index, result] : llvm::enumerate(returnOp.getOperands())) {
    auto number = static_cast<unsigned>(index);
    switch (model.kindOf(result)) {
    case ValueKind::Element:
      if (auto parts = equalParts(result, widths)) {
        for (int64_t part = 0; part < parts->second; ++part)
          addSink(parts->first, {result, number, {}, parts->first, part});
        break;
      }
      addSink(result, {result, number, {}});
      break;
    case ValueKind::RowValue:
      plan.rowOutputs.push_back({result, number});
      break;
    case ValueKind::AcrossRows:
    case ValueKind::Column:
      plan.finalizeOutputs.push_back(number);
      break;
    case ValueKind::Uniform:
      break;
    }
  }
  for (ReduceOp reduce : model.acrossRowReductions)
    addSink(reduce.getResult(), {reduce.getInput(), std::nullopt, reduce});
}

/// A resident body, where every column loop is over one constant width
/// that gives each thread few enough chunks.
std::optional<KernelPlan::Resident> planResident(const KernelModel &model,
                                                 const WidthClasses &widths,
                                                 const Schedule &schedule,
                                                 const KernelPlan &plan) {
  int64_t vector = schedule.vectorWidth;
  if (vector == 1 || schedule.elementGrid)
    return std::nullopt;

  SmallVector<Value> loops;
  for (const KernelPlan::ColumnLoop &loop : plan.columnLoops)
    loops.push_back(loop.width);
  for (ReduceOp reduce : model.rowReductions)
    loops.push_back(reduce.getInput());
  if (loops.empty() || !llvm::all_of(loops, [&](Value width) {
        return widths.equal(loops.front(), width);
      }))
    return std::nullopt;
  std::optional<int64_t> constant =
      widths.constantOf(widths.loopBound(loops.front()));
  if (!constant)
    return std::nullopt;
  int64_t width = *constant;
  int64_t perGroup = schedule.threads / schedule.rowsPerCta;
  int64_t chunks = llvm::divideCeil(width / vector, perGroup);
  // A chunk keeps the lanes of every input it reads and of every cross-row
  // partial live; kMaxResidentChunks is measured for RMSNorm's backward
  // (three inputs and a partial), and a kernel that keeps fewer values a
  // chunk may hold more chunks within the same registers.
  llvm::SetVector<BlockArgument> inputs;
  for (const KernelPlan::Sink &sink : plan.allSinks())
    for (BlockArgument input : model.inputsAtColumn(sink.value))
      inputs.insert(input);
  for (ReduceOp reduce : model.rowReductions)
    for (BlockArgument input : model.inputsAtColumn(reduce.getInput()))
      inputs.insert(input);
  int64_t perChunk =
      vector *
      static_cast<int64_t>(inputs.size() + model.acrossRowReductions.size());
  // A body with no reduction makes one pass: residency saves it no read,
  // only unrolls it, so it keeps to the measured kMaxResidentChunks
  // (cross_entropy's derived backward at 32000 bf16 columns, 16 chunks
  // under the looser limit: 3.7 KB of spills a thread, 4.0 ms on an H100
  // against 0.49 ms looped).
  bool reduces =
      !model.rowReductions.empty() || !model.acrossRowReductions.empty();
  int64_t limit = reduces
                      ? std::max<int64_t>(kMaxResidentChunks,
                                          kMaxResidentValues /
                                              std::max<int64_t>(perChunk, 1))
                      : kMaxResidentChunks;
  if (width <= 0 || width % vector != 0 || chunks > limit)
    return std::nullopt;
  // What stays live across the exchange once 16-bit lanes are kept as
  // words (ResidentRows.cpp), in registers.
  int64_t heldHalves = 0;
  for (BlockArgument input : inputs)
    heldHalves += elementTypeOf(input).getIntOrFloatBitWidth() <= 16 ? 1 : 2;
  heldHalves += 2 * static_cast<int64_t>(model.acrossRowReductions.size());
  bool reloadColumns = chunks * vector * heldHalves / 2 > kMaxHeldRegisters;
  bool pipelined = schedule.ctas && chunks <= kMaxPipelinedChunks;
  return KernelPlan::Resident{width, chunks, std::move(inputs), pipelined,
                              reloadColumns};
}
} // namespace

FailureOr<KernelPlan> gpu_lowering::planKernel(const KernelModel &model,
                                               const WidthClasses &widths,
                                               const Schedule &schedule) {
  if (failed(checkSchedule(model.func, schedule)))
    return failure();
  KernelPlan plan;
  planOutputs(model, widths, plan);
  plan.resident = planResident(model, widths, schedule, plan);
  // Per cross-row reduction: a [ctas, width] block of CTA partials, which
  // the finalize sums; with several rows per CTA, then a
  // [ctas * rowsPerCta, width] block where the looped body keeps a row per
  // group (the resident body keeps its group partials in registers).
  for (ReduceOp reduce : model.acrossRowReductions) {
    plan.workspace.push_back({reduce, 1});
    if (schedule.rowsPerCta != 1)
      plan.workspace.push_back({reduce, schedule.rowsPerCta});
  }
  // known_block_size becomes `.maxntid`, under which ptxas caps the
  // registers to keep more CTAs resident; it spilled the vectorized pad and
  // concat branches of silu_and_mul's backward (8 bytes at 64 registers).
  // So it is set only where it is needed: above 256 threads, for the CTA to
  // launch at all (65536 registers per SM: 128 per thread at 512 threads),
  // and on a persistent row kernel, with the CTAs per SM its grid was sized
  // for (`.minnctapersm`), so that the whole grid is resident at once.
  int64_t threads = schedule.threads;
  bool persistent = schedule.ctas != 0;
  std::optional<int64_t> bigBlock =
      threads > 256 ? std::optional<int64_t>(threads) : std::nullopt;
  // The row kernel exchanges values per warp (rowSharedFloats); the
  // finalize one per thread (its warps' sums of the partial rows).
  plan.rowKernel = {threads, rowSharedFloats(threads),
                    persistent ? std::optional<int64_t>(threads) : bigBlock,
                    persistent
                        ? std::optional<int64_t>(schedule.gridCtasPerSm())
                        : std::nullopt};
  plan.finalizeKernel = {threads, threads, bigBlock, std::nullopt};
  // The finalize folds into the row kernel where the schedule asks for it
  // (not by default: on an H100 RMSNorm's backward was 0.1-7 % slower
  // folded, docs/Performance.md) and there is one cross-row reduction. With
  // two (LayerNorm's dW and dB) ptxas spilled the folded kernel at the 128
  // registers a thread of two resident CTAs may have. The folded finalize
  // needs the whole grid resident (its last CTAs wait for the others),
  // which a cooperative launch guarantees, and shared memory for the
  // finalize's per-thread sums.
  plan.foldedFinalize = plan.hasFinalize() && persistent &&
                        model.acrossRowReductions.size() == 1 &&
                        schedule.foldFinalize;
  if (plan.foldedFinalize)
    plan.rowKernel.sharedFloats =
        std::max(plan.rowKernel.sharedFloats, plan.finalizeKernel.sharedFloats);
  // A warp's share of the grid's partial rows, up to kMaxFinalizeUnroll,
  // is one step: the finalize has a CTA per 32 columns, few to cover the
  // memory latency with (ncu, RMSNorm's backward at 4096 x 1024: 6.9 us at
  // 8 rows a step, 5.0 us at 33).
  plan.finalizeUnroll = std::clamp<int64_t>(
      llvm::divideCeil(schedule.ctas, threads / 32), 1, kMaxFinalizeUnroll);
  return plan;
}
