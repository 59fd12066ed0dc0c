//===- SchedulePass.cpp - the tile-schedule pass -------------------------===//
//
// Today's choices are simple and stated in KernelSchedule.h: 256 threads
// (512 for wide rows of a cross-row kernel, chooseThreads), a CTA per
// threads × vector_width elements for a purely elementwise kernel, one CTA
// per row for one with row reductions, or a persistent grid of 512 threads per
// SM when partials must be combined across rows, and several rows per CTA when
// a width the kernel is specialized for is narrow (chooseRowsPerCta). The
// attribute is where a better model (occupancy, vector width) will write its
// answer.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/IR/KernelSchedule.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/Transforms/Passes.h"

namespace mlir::tile {
#define GEN_PASS_DEF_TILESCHEDULEPASS
#include "tile/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace mlir::tile

using namespace mlir;
using namespace mlir::tile;

namespace {
struct TileSchedulePass final
    : mlir::tile::impl::TileSchedulePassBase<TileSchedulePass> {
  using TileSchedulePassBase::TileSchedulePassBase;
  TileSchedulePass(const DeviceDescription &device,
                   const ::tile::ScheduleOptions &schedule) {
#define TILE_DEVICE_FACT(MEMBER, FLAG, DEFAULT, DESCRIPTION)                   \
  MEMBER = device.MEMBER;
#include "tile/Target/DeviceFacts.def"
#define TILE_SCHEDULE_OPTION(TYPE, MEMBER, FLAG, TOOL_FLAG, DEFAULT,           \
                             DESCRIPTION)                                      \
  MEMBER = schedule.MEMBER;
#include "tile/Target/ScheduleOptions.def"
  }
  // Options cannot be copied: a clone makes its own, then takes their
  // values (Pass::clone, copyOptionValuesFrom).
  TileSchedulePass(const TileSchedulePass &other)
      : TileSchedulePassBase(other) {}

  // The device's facts and the overrides, each from the one list of them.
#define TILE_DEVICE_FACT(MEMBER, FLAG, DEFAULT, DESCRIPTION)                   \
  Option<int64_t> MEMBER{*this, FLAG, llvm::cl::desc(DESCRIPTION),             \
                         llvm::cl::init(DEFAULT)};
#include "tile/Target/DeviceFacts.def"
#define TILE_SCHEDULE_OPTION(TYPE, MEMBER, FLAG, TOOL_FLAG, DEFAULT,           \
                             DESCRIPTION)                                      \
  Option<TYPE> MEMBER{*this, FLAG, llvm::cl::desc(DESCRIPTION),                \
                      llvm::cl::init(DEFAULT)};
#include "tile/Target/ScheduleOptions.def"

  void runOnOperation() override {
    warnNoKernels(getOperation(), getArgument());
    DeviceDescription device;
#define TILE_DEVICE_FACT(MEMBER, FLAG, DEFAULT, DESCRIPTION)                   \
  device.MEMBER = MEMBER;
#include "tile/Target/DeviceFacts.def"
    if (device.sms < 1 || device.threadsPerSm < 32 ||
        device.registersPerSm < 32 * 16 || device.sharedBytesPerSm < 0) {
      Block *body = getOperation().getBody();
      emitError(body->empty() ? getOperation().getLoc()
                              : body->front().getLoc(),
                "tile-schedule: the device description (")
          << device.str() << ") is not a GPU's";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr(TileDialect::getKernelAttrName()))
        continue;
      bool chosen = !func->hasAttr("tile.schedule");
      KernelSchedule schedule = getSchedule(func);
      // Options first, then what depends on them: the grid and the vector
      // width decide the default threads, and the threads the default
      // CTAs and rows per CTA. A schedule this pass chooses takes every
      // default from the options; one written by hand changes only where
      // an option says so.
      if (rowGrid)
        schedule.elementGrid = false;
      if (vectorWidth)
        schedule.vectorWidth = vectorWidth;
      if (threads)
        schedule.threads = threads;
      else if (chosen)
        schedule.threads =
            chooseThreads(func, schedule.vectorWidth, schedule.elementGrid);
      // Any kernel with a reduction may take a persistent grid (a CTA walks
      // many rows, and a resident body loads one row ahead).
      if (ctas && reducesAnything(func)) {
        schedule.ctas = ctas;
        schedule.ctasPerSm = 0;
      } else if (chosen && reducesAcrossRows(func)) {
        schedule.ctas =
            KernelSchedule::persistentCtas(schedule.threads, device);
        schedule.ctasPerSm = 0;
      }
      // The CTAs per SM the grid needs on this device, unless the schedule
      // was written with them.
      if (schedule.ctas && !schedule.ctasPerSm)
        schedule.ctasPerSm = schedule.gridCtasPerSm(device);
      if (foldFinalize)
        schedule.foldFinalize = true;
      // An element grid has no rows to group.
      if (schedule.elementGrid)
        schedule.rowsPerCta = 1;
      else if (rowsPerCta)
        schedule.rowsPerCta = rowsPerCta;
      else if (chosen)
        schedule.rowsPerCta =
            chooseRowsPerCta(func, schedule.threads, schedule.vectorWidth);
      setSchedule(func, schedule);
      if (failed(verifySchedule(func, func->getAttr("tile.schedule"))))
        return signalPassFailure();
    }
  }
};
} // namespace

std::unique_ptr<Pass>
mlir::tile::createTileSchedulePass(const DeviceDescription &device,
                                   const ::tile::ScheduleOptions &schedule) {
  return std::make_unique<TileSchedulePass>(device, schedule);
}
