//===- parse-verify.cpp - fuzz the parser and every verifier --------------===//
//
// Parse + verify, then print and parse the module again: what Tile prints
// must read back (the tools pipe their output into each other).
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>

static void parseVerify(const uint8_t *data, size_t size) {
  mlir::OwningOpRef<mlir::ModuleOp> module = ::tile::fuzz::parse(data, size);
  if (!module)
    return;
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  auto reparsed = ::tile::fuzz::parse(
      reinterpret_cast<const uint8_t *>(text.data()), text.size());
  if (!reparsed) {
    llvm::errs() << "printed module does not parse back:\n" << text << "\n";
    std::abort();
  }
}

TILE_FUZZ_HARNESS(parseVerify)
