//===- KernelSchedule.cpp - the tile.schedule attribute ------------------===//

#include "tile/Dialect/Tile/IR/KernelSchedule.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "llvm/ADT/EquivalenceClasses.h"

using namespace mlir;
using namespace mlir::tile;

namespace {
constexpr StringLiteral kScheduleAttr = "tile.schedule";
} // namespace

bool mlir::tile::reducesAcrossRows(func::FuncOp func) {
  bool found = false;
  func.walk([&](ReduceOp reduce) { found |= reduce.getAcrossRows(); });
  return found;
}

bool mlir::tile::reducesAnything(func::FuncOp func) {
  bool found = false;
  func.walk([&](ReduceOp) { found = true; });
  return found;
}

bool mlir::tile::isPurelyElementwise(func::FuncOp func) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return false;
  // Tensors an op ties together (its tensor operands and results) have the
  // same shape: an elementwise op's operands are checked equally wide at
  // launch, and a splat takes the shape of its `like` operand.
  llvm::EquivalenceClasses<Value> sameShape;
  SmallVector<Value> tensors;
  for (Operation &op : func.getBody().front()) {
    SmallVector<Value> opTensors;
    for (Value value : llvm::concat<Value>(op.getOperands(), op.getResults()))
      if (isa<RankedTensorType>(value.getType()))
        opTensors.push_back(value);
    if (opTensors.empty() || isa<tensor::DimOp>(op))
      continue;
    bool elementwise = isa<CastOp, SplatOp, func::ReturnOp>(op) ||
                       op.hasTrait<OpTrait::Elementwise>();
    if (!elementwise || llvm::any_of(opTensors, [](Value value) {
          return cast<RankedTensorType>(value.getType()).getRank() != 2;
        }))
      return false;
    if (isa<func::ReturnOp>(op))
      continue;
    for (Value value : opTensors)
      sameShape.unionSets(opTensors.front(), value);
    llvm::append_range(tensors, opTensors);
  }
  // Attribute verifiers run before the function's own: its block may not
  // end in a return yet.
  Block &body = func.getBody().front();
  auto returnOp =
      body.empty() ? func::ReturnOp() : dyn_cast<func::ReturnOp>(body.back());
  if (!returnOp || returnOp.getNumOperands() == 0)
    return false;
  // Every result, and every tensor computed with, in one class: two
  // independent chains of different widths have no common flat index.
  Value first = returnOp.getOperand(0);
  sameShape.insert(first);
  for (Value value : llvm::concat<Value>(tensors, returnOp.getOperands()))
    if (!isa<RankedTensorType>(value.getType()) ||
        !sameShape.isEquivalent(value, first))
      return false;
  return true;
}

SmallVector<std::pair<unsigned, int64_t>>
mlir::tile::getSpecializedWidths(func::FuncOp func) {
  SmallVector<std::pair<unsigned, int64_t>> widths;
  auto specialized =
      func->getAttrOfType<DictionaryAttr>(TileDialect::getSpecializeAttrName());
  if (!specialized)
    return widths;
  for (NamedAttribute entry : specialized) {
    unsigned index = 0;
    auto width = dyn_cast<IntegerAttr>(entry.getValue());
    if (!width ||
        entry.getName().getValue().drop_front(1).getAsInteger(10, index))
      continue; // the verifier reports it
    widths.push_back({index, width.getInt()});
  }
  return widths;
}

namespace {
/// The widest width `func` is specialized for (tile.specialize), or 0.
int64_t specializedWidth(func::FuncOp func) {
  int64_t widest = 0;
  for (auto [index, width] : getSpecializedWidths(func))
    widest = std::max(widest, width);
  return widest;
}

/// Vector chunks of a row per thread above which a reducing kernel takes
/// more threads: two chunks of three inputs and a partial are about 80
/// registers (ptxas, RMSNorm's backward), four are 160, over the 128 that
/// two CTAs of 256 threads per SM allow.
constexpr int64_t kChunksPerThread = 2;
} // namespace

int64_t mlir::tile::chooseThreads(func::FuncOp func, int64_t vectorWidth,
                                  bool elementGrid) {
  // A cross-row kernel gains most from a resident row (its passes share
  // one read of the row, its partials stay in registers): wide rows take
  // 512 threads so that fewer chunks per thread cover them. Measured on an
  // H200 (docs/Performance.md): RMSNorm's backward at 4096 x 16384 went
  // from 0.31 to 0.57 of the ceiling; its forward and SwiGLU lost up to a
  // quarter at 512 threads, so they keep 256.
  if (elementGrid)
    return KernelSchedule::kElementGridThreads;
  int64_t width = specializedWidth(func);
  int64_t threads = KernelSchedule::kDefaultThreads;
  if (width <= 0 || vectorWidth <= 0 || !reducesAnything(func))
    return threads;
  int64_t chunks = (width + vectorWidth - 1) / vectorWidth;
  if (reducesAcrossRows(func)) {
    if (chunks > kChunksPerThread * threads)
      threads = 2 * threads;
    return threads;
  }
  // A row reduction alone (RMSNorm's forward): a row too wide to stay in
  // registers at 256 threads is read twice (once per pass). Measured on an
  // H200 (docs/Performance.md): in f32, the resident row at 512 or 1024
  // threads took the forward at 32768 x 8192 from 0.73 to 0.96 of the
  // ceiling and at 4096 x 16384 from 0.61 to 0.89; in bf16 and f16 (eight
  // lanes a chunk) it lost (0.67 -> 0.62 at 4096 x 16384), so they keep
  // 256.
  //
  // A narrow row of 16-bit lanes (at most a chunk a thread at 128 threads,
  // several rows per CTA) takes 128 threads: smaller CTAs wait less on
  // each other at the exchange. Measured on an H200 (docs/Performance.md):
  // bf16 at 65536 x 1024 0.90 -> 0.92 of the ceiling, 4096 x 1024 0.46 ->
  // 0.48, f16 unchanged; at 4096 columns no change, at 16384 a loss.
  if (vectorWidth > 4) {
    if (chunks <= KernelSchedule::kNarrowRowThreads)
      return KernelSchedule::kNarrowRowThreads;
    return threads;
  }
  while (chunks > KernelSchedule::kMaxResidentChunks * threads &&
         threads < 1024)
    threads *= 2;
  return threads;
}

bool mlir::tile::validRowsPerCta(int64_t rows, int64_t threads,
                                 bool acrossRows) {
  // Bounded by the threads before any product, which could wrap.
  if (rows < 1 || rows > threads || !llvm::isPowerOf2_64(rows) ||
      threads % rows != 0)
    return false;
  int64_t group = threads / rows;
  if (group % 32 == 0)
    return true;
  // A sub-warp group exchanges by xor shuffles within its aligned lanes; a
  // cross-row kernel's group partials assume whole warps.
  return !acrossRows && 32 % group == 0;
}

int64_t mlir::tile::chooseRowsPerCta(func::FuncOp func, int64_t threads,
                                     int64_t vectorWidth) {
  int64_t width = specializedWidth(func);
  if (width <= 0 || threads <= 0 || vectorWidth <= 0)
    return 1;
  int64_t chunks = (width + vectorWidth - 1) / vectorWidth;
  // Without a reduction there is no barrier to wait at: a row of fewer
  // chunks than threads leaves the rest idle and a CTA has too few bytes
  // in flight, so it takes several rows. Wider rows keep one row per CTA:
  // halving the threads per row only lengthened each thread's loop (SwiGLU
  // at 2048 columns lost up to 20 % with two rows per CTA,
  // docs/Performance.md).
  if (!reducesAnything(func) && chunks >= threads)
    return 1;
  // Groups of two chunks a thread: four rows per CTA took RMSNorm's forward
  // at 1024 bf16 columns from 0.50 to 0.81 of the streaming ceiling (H200,
  // docs/Performance.md), and a kernel without a reduction may loop over a
  // narrower result (silu_and_mul's half row), which then has one chunk a
  // thread. Whole warps while the group is above a warp (a user's threads
  // need not be a power of two: 96 stays in warps), a power of two below;
  // a sub-warp group's exchange is a warp's shuffles alone
  // (RowExchange.cpp). A cross-row reduction's groups stay whole warps:
  // their partials are added within the CTA before they reach the
  // workspace, so they do not multiply the finalize's work.
  int64_t smallest = reducesAcrossRows(func) ? 32 : 1;
  int64_t group = threads;
  while (group > smallest && (group % 64 == 0 || group <= 32) &&
         chunks < 2 * group)
    group /= 2;
  return threads / group;
}

KernelSchedule mlir::tile::defaultSchedule(func::FuncOp func,
                                           const DeviceDescription &device) {
  KernelSchedule schedule;
  schedule.elementGrid = isPurelyElementwise(func);
  // 16 bytes of the narrowest storage type the kernel moves.
  unsigned narrowest = 4;
  for (Type type :
       llvm::concat<const Type>(func.getArgumentTypes(), func.getResultTypes()))
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      narrowest = std::min(narrowest,
                           tensor.getElementType().getIntOrFloatBitWidth() / 8);
  schedule.vectorWidth = 16 / std::max(narrowest, 1u);
  schedule.threads =
      chooseThreads(func, schedule.vectorWidth, schedule.elementGrid);
  if (reducesAcrossRows(func)) {
    schedule.ctas = KernelSchedule::persistentCtas(schedule.threads, device);
    schedule.ctasPerSm = schedule.gridCtasPerSm(device);
  }
  // An element grid has no rows to group.
  schedule.rowsPerCta =
      schedule.elementGrid
          ? 1
          : chooseRowsPerCta(func, schedule.threads, schedule.vectorWidth);
  return schedule;
}

KernelSchedule mlir::tile::getSchedule(func::FuncOp func) {
  auto dict = func->getAttrOfType<DictionaryAttr>(kScheduleAttr);
  if (!dict)
    return defaultSchedule(func);
  // Entries a hand-written schedule leaves out keep their defaults.
  KernelSchedule schedule = defaultSchedule(func);
  schedule.ctas = 0;
  schedule.ctasPerSm = 0;
  schedule.rowsPerCta = 1; // setSchedule leaves out a 1
  auto gridKind = dyn_cast_or_null<StringAttr>(dict.get("grid"));
  schedule.elementGrid = gridKind && gridKind.getValue() == "elements";
  if (auto threads = dyn_cast_or_null<IntegerAttr>(dict.get("threads")))
    schedule.threads = threads.getInt();
  if (auto ctas = dyn_cast_or_null<IntegerAttr>(dict.get("ctas")))
    schedule.ctas = ctas.getInt();
  if (auto perSm = dyn_cast_or_null<IntegerAttr>(dict.get("ctas_per_sm")))
    schedule.ctasPerSm = perSm.getInt();
  if (auto width = dyn_cast_or_null<IntegerAttr>(dict.get("vector_width")))
    schedule.vectorWidth = width.getInt();
  if (auto rows = dyn_cast_or_null<IntegerAttr>(dict.get("rows_per_cta")))
    schedule.rowsPerCta = rows.getInt();
  auto finalize = dyn_cast_or_null<StringAttr>(dict.get("finalize"));
  schedule.foldFinalize = finalize && finalize.getValue() == "folded";
  return schedule;
}

void mlir::tile::setSchedule(func::FuncOp func,
                             const KernelSchedule &schedule) {
  Builder b(func.getContext());
  SmallVector<NamedAttribute> entries;
  entries.push_back(
      b.getNamedAttr("grid", b.getStringAttr(schedule.elementGrid ? "elements"
                                             : schedule.ctas      ? "persistent"
                                                                  : "rows")));
  entries.push_back(
      b.getNamedAttr("threads", b.getI64IntegerAttr(schedule.threads)));
  if (schedule.ctas)
    entries.push_back(
        b.getNamedAttr("ctas", b.getI64IntegerAttr(schedule.ctas)));
  if (schedule.ctas && schedule.ctasPerSm)
    entries.push_back(
        b.getNamedAttr("ctas_per_sm", b.getI64IntegerAttr(schedule.ctasPerSm)));
  entries.push_back(b.getNamedAttr("vector_width",
                                   b.getI64IntegerAttr(schedule.vectorWidth)));
  if (schedule.rowsPerCta != 1)
    entries.push_back(b.getNamedAttr("rows_per_cta",
                                     b.getI64IntegerAttr(schedule.rowsPerCta)));
  // Only the exception is spelled: a separate finalize is the default.
  if (schedule.ctas && schedule.foldFinalize)
    entries.push_back(b.getNamedAttr("finalize", b.getStringAttr("folded")));
  func->setAttr(kScheduleAttr, b.getDictionaryAttr(entries));
}

LogicalResult mlir::tile::verifySchedule(Operation *op, Attribute value) {
  auto dict = dyn_cast<DictionaryAttr>(value);
  if (!dict || !isa<func::FuncOp>(op))
    return op->emitError("'tile.schedule' must be a dictionary on a "
                         "func.func");
  auto grid = dyn_cast_or_null<StringAttr>(dict.get("grid"));
  auto threads = dyn_cast_or_null<IntegerAttr>(dict.get("threads"));
  auto ctas = dyn_cast_or_null<IntegerAttr>(dict.get("ctas"));
  for (NamedAttribute entry : dict)
    if (!llvm::is_contained({"grid", "threads", "ctas", "ctas_per_sm",
                             "vector_width", "rows_per_cta", "finalize"},
                            entry.getName().getValue()))
      return op->emitError("'tile.schedule' has an unknown entry '")
             << entry.getName().getValue() << "'";
  if (!grid ||
      !llvm::is_contained({"elements", "rows", "persistent"}, grid.getValue()))
    return op->emitError("'tile.schedule' needs grid = \"elements\", "
                         "\"rows\" or \"persistent\"");
  if (failed(verifyFunctionBody(cast<func::FuncOp>(op), kScheduleAttr)))
    return failure();
  if (grid.getValue() == "elements" &&
      !isPurelyElementwise(cast<func::FuncOp>(op)))
    return op->emitError("'tile.schedule' grid = \"elements\" needs a "
                         "purely elementwise kernel (every tensor [rows, W] "
                         "of one W, only elementwise ops, casts and splats)");
  if (!threads || threads.getInt() < 32 || threads.getInt() > 1024 ||
      threads.getInt() % 32)
    return op->emitError("'tile.schedule' needs threads, a multiple of 32 "
                         "from 32 to 1024");
  if (auto width = dyn_cast_or_null<IntegerAttr>(dict.get("vector_width")))
    if (width.getInt() < 1 || width.getInt() > 16 ||
        !llvm::isPowerOf2_64(width.getInt()))
      return op->emitError("'tile.schedule' vector_width must be a power of "
                           "two from 1 to 16");
  if (auto rows = dyn_cast_or_null<IntegerAttr>(dict.get("rows_per_cta")))
    if (!validRowsPerCta(rows.getInt(), threads.getInt(),
                         reducesAcrossRows(cast<func::FuncOp>(op))))
      return op->emitError("'tile.schedule' rows_per_cta must be a power of "
                           "two that splits the threads into groups of "
                           "whole warps, or (without a reduction across "
                           "rows) of a power of two below 32");
  if (grid.getValue() == "elements" && dict.get("rows_per_cta"))
    return op->emitError("'tile.schedule' grid = \"elements\" has no rows "
                         "per CTA");
  bool persistent = grid.getValue() == "persistent";
  if (persistent != static_cast<bool>(ctas) || (ctas && ctas.getInt() <= 0))
    return op->emitError("'tile.schedule' needs a positive ctas exactly "
                         "when the grid is persistent");
  if (auto perSm = dyn_cast_or_null<IntegerAttr>(dict.get("ctas_per_sm")))
    if (!persistent || perSm.getInt() < 1 ||
        perSm.getInt() > 2048 / threads.getInt())
      return op->emitError("'tile.schedule' ctas_per_sm belongs to a "
                           "persistent grid and must be from 1 to 2048 "
                           "threads' worth of CTAs");
  if (Attribute finalize = dict.get("finalize")) {
    auto kind = dyn_cast<StringAttr>(finalize);
    if (!kind || !llvm::is_contained({"separate", "folded"}, kind.getValue()))
      return op->emitError("'tile.schedule' finalize must be \"separate\" "
                           "or \"folded\"");
    if (!persistent)
      return op->emitError("'tile.schedule' finalize belongs to a "
                           "persistent grid");
  }
  if (!persistent && reducesAcrossRows(cast<func::FuncOp>(op)))
    return op->emitError("'tile.schedule' must be persistent for a kernel "
                         "that reduces across rows");
  return success();
}
