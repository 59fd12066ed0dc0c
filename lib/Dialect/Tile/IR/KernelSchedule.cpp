//===- KernelSchedule.cpp - the tile.schedule attribute ------------------===//

#include "tile/Dialect/Tile/IR/KernelSchedule.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

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

int64_t mlir::tile::chooseRowsPerCta(func::FuncOp func, int64_t threads,
                                     int64_t vectorWidth) {
  auto specialized =
      func->getAttrOfType<DictionaryAttr>(TileDialect::getSpecializeAttrName());
  if (!specialized || threads <= 0 || vectorWidth <= 0)
    return 1;
  // Only a row reduction leaves idle threads waiting at its barriers. An
  // elementwise kernel lost up to 20 % with two rows per CTA, and a
  // persistent grid multiplies its partial rows by the rows per CTA
  // (RMSNorm's backward at 4096 × 1024 went from 0.13 to 0.09).
  bool reducesRows = false, reducesAcross = false;
  func.walk([&](ReduceOp reduce) {
    (reduce.getAcrossRows() ? reducesAcross : reducesRows) = true;
  });
  if (!reducesRows || reducesAcross)
    return 1;
  int64_t width = 0;
  for (NamedAttribute entry : specialized)
    if (auto value = dyn_cast<IntegerAttr>(entry.getValue()))
      width = std::max(width, value.getInt());
  if (width <= 0)
    return 1;
  // Measured on an H200 (docs/Performance.md): four rows per CTA took
  // RMSNorm's forward at 1024 bf16 columns from 0.50 to 0.81 of the
  // streaming ceiling; on wide rows they cost up to half.
  int64_t chunks = (width + vectorWidth - 1) / vectorWidth;
  int64_t group = threads;
  while (group > 32 && group % 64 == 0 && chunks < 2 * group)
    group /= 2;
  return threads / group;
}

KernelSchedule mlir::tile::defaultSchedule(func::FuncOp func) {
  KernelSchedule schedule;
  if (reducesAcrossRows(func))
    schedule.ctas = KernelSchedule::kDefaultPersistentCtas;
  // 16 bytes of the narrowest storage type the kernel moves.
  unsigned narrowest = 4;
  for (Type type :
       llvm::concat<const Type>(func.getArgumentTypes(), func.getResultTypes()))
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      narrowest = std::min(narrowest,
                           tensor.getElementType().getIntOrFloatBitWidth() / 8);
  schedule.vectorWidth = 16 / std::max(narrowest, 1u);
  schedule.rowsPerCta =
      chooseRowsPerCta(func, schedule.threads, schedule.vectorWidth);
  return schedule;
}

KernelSchedule mlir::tile::getSchedule(func::FuncOp func) {
  auto dict = func->getAttrOfType<DictionaryAttr>(kScheduleAttr);
  if (!dict)
    return defaultSchedule(func);
  // Entries a hand-written schedule leaves out keep their defaults.
  KernelSchedule schedule = defaultSchedule(func);
  schedule.ctas = 0;
  schedule.rowsPerCta = 1; // setSchedule leaves out a 1
  if (auto threads = dyn_cast_or_null<IntegerAttr>(dict.get("threads")))
    schedule.threads = threads.getInt();
  if (auto ctas = dyn_cast_or_null<IntegerAttr>(dict.get("ctas")))
    schedule.ctas = ctas.getInt();
  if (auto width = dyn_cast_or_null<IntegerAttr>(dict.get("vector_width")))
    schedule.vectorWidth = width.getInt();
  if (auto rows = dyn_cast_or_null<IntegerAttr>(dict.get("rows_per_cta")))
    schedule.rowsPerCta = rows.getInt();
  return schedule;
}

void mlir::tile::setSchedule(func::FuncOp func,
                             const KernelSchedule &schedule) {
  Builder b(func.getContext());
  SmallVector<NamedAttribute> entries;
  entries.push_back(b.getNamedAttr(
      "grid", b.getStringAttr(schedule.ctas ? "persistent" : "rows")));
  entries.push_back(
      b.getNamedAttr("threads", b.getI64IntegerAttr(schedule.threads)));
  if (schedule.ctas)
    entries.push_back(
        b.getNamedAttr("ctas", b.getI64IntegerAttr(schedule.ctas)));
  entries.push_back(b.getNamedAttr("vector_width",
                                   b.getI64IntegerAttr(schedule.vectorWidth)));
  if (schedule.rowsPerCta != 1)
    entries.push_back(b.getNamedAttr("rows_per_cta",
                                     b.getI64IntegerAttr(schedule.rowsPerCta)));
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
    if (!llvm::is_contained(
            {"grid", "threads", "ctas", "vector_width", "rows_per_cta"},
            entry.getName().getValue()))
      return op->emitError("'tile.schedule' has an unknown entry '")
             << entry.getName().getValue() << "'";
  if (!grid || (grid.getValue() != "rows" && grid.getValue() != "persistent"))
    return op->emitError(
        "'tile.schedule' needs grid = \"rows\" or \"persistent\"");
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
    if (rows.getInt() < 1 || !llvm::isPowerOf2_64(rows.getInt()) ||
        threads.getInt() % (32 * rows.getInt()) != 0)
      return op->emitError("'tile.schedule' rows_per_cta must be a power of "
                           "two that splits the threads into whole warps");
  bool persistent = grid.getValue() == "persistent";
  if (persistent != static_cast<bool>(ctas) || (ctas && ctas.getInt() <= 0))
    return op->emitError("'tile.schedule' needs a positive ctas exactly "
                         "when the grid is persistent");
  if (!persistent && reducesAcrossRows(cast<func::FuncOp>(op)))
    return op->emitError("'tile.schedule' must be persistent for a kernel "
                         "that reduces across rows");
  return success();
}
