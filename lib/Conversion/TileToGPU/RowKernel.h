//===- RowKernel.h - the row kernel's body ----------------------*- C++ -*-===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_ROWKERNEL_H
#define TILE_LIB_CONVERSION_TILETOGPU_ROWKERNEL_H

#include "PointEmitter.h"

namespace mlir::tile::gpu_lowering {

/// The row kernel's body: the element grid where the schedule says so;
/// else resident rows where the plan has them (with looped rows for
/// misaligned buffers); else looped rows.
void emitRowBody(KernelFrame &frame, PointEmitter &points);

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_ROWKERNEL_H
