//===- FinalizeKernel.h - the finalize kernel's body ------------*- C++ -*-===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_FINALIZEKERNEL_H
#define TILE_LIB_CONVERSION_TILETOGPU_FINALIZEKERNEL_H

#include "PointEmitter.h"

namespace mlir::tile::gpu_lowering {

/// The finalize kernel's body: the sums of the row kernel's partial rows,
/// and the results that read them.
void emitFinalizeBody(KernelFrame &frame, PointEmitter &points);

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_FINALIZEKERNEL_H
