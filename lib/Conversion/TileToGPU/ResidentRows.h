//===- ResidentRows.h - the row kernel's resident body ----------*- C++ -*-===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_RESIDENTROWS_H
#define TILE_LIB_CONVERSION_TILETOGPU_RESIDENTROWS_H

#include "PointEmitter.h"

namespace mlir::tile::gpu_lowering {

/// The resident body, for aligned buffers: every row of the plan's constant
/// width held in registers by the chunks of each thread.
void emitResidentRows(KernelFrame &frame, PointEmitter &points,
                      const KernelPlan::Resident &resident);

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_RESIDENTROWS_H
