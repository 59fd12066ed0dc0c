//===- FoldedFinalize.h - the finalize in the last CTAs ---------*- C++ -*-===//

#ifndef TILE_LIB_CONVERSION_TILETOGPU_FOLDEDFINALIZE_H
#define TILE_LIB_CONVERSION_TILETOGPU_FOLDEDFINALIZE_H

#include "KernelFrame.h"

namespace mlir::tile::gpu_lowering {

/// The end of a row kernel that folds the finalize in: the arrival, and in
/// the last CTAs to arrive the finalize's body (FoldedFinalize.cpp).
void emitFoldedFinalize(const KernelFrame &rows);

} // namespace mlir::tile::gpu_lowering

#endif // TILE_LIB_CONVERSION_TILETOGPU_FOLDEDFINALIZE_H
