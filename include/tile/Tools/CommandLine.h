//===- CommandLine.h - every Tile tool's command line -----------*- C++ -*-===//
//
// The tools link LLVM, whose shared library registers every backend's
// options (AMDGPU, ARM, BPF, ...): without care `--help` lists hundreds of
// flags a Tile user never needs, and `--version` prints the distribution's
// LLVM. One call before parsing makes every tool answer the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_COMMANDLINE_H
#define TILE_TOOLS_COMMANDLINE_H

#include "tile/Target/ScheduleOptions.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <memory>

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

/// tile-schedule's overrides as a tool's command-line options
/// (`--threads-per-cta=N`, `--ctas=N`, ...), one per entry of
/// ScheduleOptions.def with its name, default and description, listed under
/// `category`. Made at namespace scope, as a tool's other options are.
class ScheduleCommandLine {
public:
  explicit ScheduleCommandLine(llvm::cl::OptionCategory &category);
  ~ScheduleCommandLine();
  /// The values parsed.
  ::tile::ScheduleOptions get() const;

private:
  struct Options;
  std::unique_ptr<Options> options;
};

} // namespace mlir::tile

#endif // TILE_TOOLS_COMMANDLINE_H
