//===- FuzzTarget.h - what every libFuzzer harness shares -----*- C++ -*-===//
//
// Each harness feeds the bytes libFuzzer gives it through the path a tool
// takes (bounded nesting, the parser, the verifier) and then through one
// stage of the compiler. A harness never judges the result: a located error
// is the right answer to bad input. What it finds is what the sanitizers
// and the process see: a crash, an abort, a hang (libFuzzer's -timeout), a
// runaway allocation (-rss_limit_mb / -malloc_limit_mb).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_FUZZ_FUZZTARGET_H
#define TILE_FUZZ_FUZZTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>

namespace tile::fuzz {

/// The name inputs are parsed under: their locations read
/// `fuzz.mlir:line:col`.
inline constexpr llvm::StringLiteral kInputName = "fuzz.mlir";

/// Aborts (a finding) when an error about the input has no place in it:
/// every error must read `file:line:col: error:` (issue 50). An input that
/// writes locations of its own is exempt.
void checkLocated(mlir::Location loc, llvm::StringRef message);
/// The same for an error the evaluator returns as text.
void checkLocated(llvm::Error error);

/// Parses and verifies `data` as the tools do: nesting bounded first, then
/// MLIR's parser. Null where the tools would print an error. Diagnostics
/// are discarded. The context is shared by the inputs of a run and
/// replaced every few thousand inputs, so that what it interns stays
/// bounded.
mlir::OwningOpRef<mlir::ModuleOp> parse(const uint8_t *data, size_t size);

/// Runs `harness` on `data` on the tools' large stack (ToolSupport.h): the
/// harnesses see the stack the tools have.
int runHarness(const uint8_t *data, size_t size,
               void (*harness)(const uint8_t *, size_t));

/// libFuzzer's custom mutator for tile IR (StructureMutator.cpp): half the
/// time a change of the module's structure (blocks, block arguments,
/// signatures, terminators, bodies, Tile attributes, types) printed in
/// generic form, otherwise libFuzzer's byte mutations.
size_t mutateStructure(uint8_t *data, size_t size, size_t maxSize,
                       unsigned seed);

} // namespace tile::fuzz

/// Defines LLVMFuzzerTestOneInput for a harness body `void body(const uint8_t
/// *data, size_t size)`, and the structural mutator for it.
#define TILE_FUZZ_HARNESS(body)                                                \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {    \
    return ::tile::fuzz::runHarness(data, size, body);                         \
  }                                                                            \
  extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,        \
                                            size_t maxSize, unsigned seed) {   \
    return ::tile::fuzz::mutateStructure(data, size, maxSize, seed);           \
  }

#endif // TILE_FUZZ_FUZZTARGET_H
