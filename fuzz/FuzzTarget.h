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

#include <cstddef>
#include <cstdint>

namespace tile::fuzz {

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

} // namespace tile::fuzz

/// Defines LLVMFuzzerTestOneInput for a harness body `void body(const uint8_t
/// *data, size_t size)`.
#define TILE_FUZZ_HARNESS(body)                                                \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {    \
    return ::tile::fuzz::runHarness(data, size, body);                         \
  }

#endif // TILE_FUZZ_FUZZTARGET_H
