//===- Manifest.h - what a runtime needs to launch the kernels --*- C++ -*-===//
//
// The kernel manifest describes, without MLIR, how to call the kernels
// convert-tile-to-gpu generates for each tile kernel: their names, the
// parameter list in order (what each is, its dtype, the shape a buffer
// must have), the launch rule as expressions of the shapes, the shared
// memory, and the workspace size. Shapes are written in symbols: `rows`,
// `w<i>` (the width of tensor argument i), `arg<i>` (scalar argument i),
// `ctas` (the row kernel's CTA count, chosen at launch).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_CONVERSION_TILETOGPU_MANIFEST_H
#define TILE_CONVERSION_TILETOGPU_MANIFEST_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tile {

/// Writes the manifest of every tile.kernel of `module` as JSON.
LogicalResult writeKernelManifest(ModuleOp module, llvm::raw_ostream &os);

} // namespace mlir::tile

#endif // TILE_CONVERSION_TILETOGPU_MANIFEST_H
