//===- CommandLine.h - what every Tile tool does to its command line -*- C++
//-*-===//
//
// The tools link LLVM, whose shared library registers every backend's
// options (AMDGPU, ARM, BPF, ...): without care `--help` lists hundreds of
// flags a Tile user never needs, and `--version` prints the distribution's
// LLVM. One call before parsing makes every tool answer the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_COMMANDLINE_H
#define TILE_TOOLS_COMMANDLINE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace llvm::cl {
class OptionCategory;
} // namespace llvm::cl

namespace mlir::tile {

/// Prepares the command line of `tool` before it is parsed:
/// - `--version` prints Tile's version, git revision and the LLVM it was
///   built with (tile/Version/Version.h);
/// - `--help` lists the options of `categories` first and hides LLVM's own
///   (still accepted; `--help-hidden` lists them). With no categories
///   (tile-opt, whose MLIR driver registers its options while parsing),
///   every option registered so far is hidden: those are LLVM's;
/// - MLIR's context options are registered, with
///   `--mlir-print-op-on-diagnostic` off by default: a kernel-level error is
///   its located message, not the function in generic form after it (the
///   flag, listed under the first category where the tool `readsIR`, turns
///   the dump back on).
void prepareCommandLine(
    llvm::StringRef tool,
    llvm::ArrayRef<const llvm::cl::OptionCategory *> categories,
    bool readsIR = true);

} // namespace mlir::tile

#endif // TILE_TOOLS_COMMANDLINE_H
