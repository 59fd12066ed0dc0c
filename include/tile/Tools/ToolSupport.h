//===- ToolSupport.h - what every Tile tool does first ----------*- C++ -*-===//
//
// MLIR's parser, verifier and printer recurse once per level of nesting,
// and several of Tile's passes once per op along a use-def chain. So the
// tools (and the JIT) bound the nesting of their input before parsing it,
// and run their work on a thread with a large stack: deep input gives a
// located error, never a stack overflow.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_TOOLSUPPORT_H
#define TILE_TOOLS_TOOLSUPPORT_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace llvm {
class MemoryBuffer;
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace mlir::tile {

/// Brackets ((, [, {, <) nested deeper than this are refused. Kernels nest a
/// few levels; MLIR's generic form of a lowered module about twenty.
constexpr int64_t kMaxNesting = 512;

/// Where and why input must not reach MLIR's parser.
struct UnparsableInput {
  size_t offset;
  std::string message;
};

/// The first place in `text` that MLIR 22's parser cannot take safely:
/// nesting deeper than kMaxNesting (the parser recurses per level), or a
/// dense array of `index` (the parser crashes on it; found by the fuzzers):
/// `array<index`, with white space, NUL bytes or comments around the `<` as
/// MLIR's lexer allows, or with a type alias of index. Strings and `//`
/// comments are skipped; `->` closes nothing. Every tool, the JIT and the
/// fuzz harnesses call this before they parse.
std::optional<UnparsableInput> findUnparsableInput(llvm::StringRef text);

/// Reports findUnparsableInput's finding in buffer `bufferId` of
/// `sourceMgr` as `file:line:col: error: ...` with the line, on `os`
/// (default: stderr); true if there was one.
bool reportUnparsableInput(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                           llvm::raw_ostream *os = nullptr);

/// The stack the tools run on (the main thread's is 8 MiB by default).
constexpr unsigned kToolStackBytes = 512u << 20;

/// Runs `body` on a thread with kToolStackBytes of stack; its result.
int runWithLargeStack(llvm::function_ref<int()> body);

} // namespace mlir::tile

#endif // TILE_TOOLS_TOOLSUPPORT_H
