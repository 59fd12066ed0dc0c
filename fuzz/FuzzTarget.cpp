//===- FuzzTarget.cpp - what every libFuzzer harness shares ---------------===//

#include "FuzzTarget.h"

#include "tile/InitTile.h"
#include "tile/Pipelines/Pipelines.h"
#include "tile/Tools/ToolSupport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <memory>
#include <string>

using namespace mlir;

/// ASan's defaults for every harness. LLVM's headers poison and unpoison the
/// slabs of BumpPtrAllocator when compiled with ASan, but Debian's MLIR
/// libraries are not: a slab poisoned by Tile's (instrumented) inline code
/// and handed out by MLIR's (uninstrumented) code reads as a use after
/// poison, so manual poisoning is off. Leak checks are off too: what a
/// context interns lives as long as the context (see kInputsPerContext).
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0:detect_leaks=0";
}

namespace {
/// Inputs parsed in one context before it is replaced: a context keeps every
/// type and attribute it ever interned.
constexpr unsigned kInputsPerContext = 2000;

struct Context {
  std::unique_ptr<MLIRContext> context;
  unsigned inputs = 0;

  /// Called as an input begins, never during one: the modules of an input
  /// must not outlive their context.
  void beginInput() {
    if (context && ++inputs <= kInputsPerContext)
      return;
    DialectRegistry registry;
    mlir::tile::registerTileDialects(registry);
    mlir::tile::registerGpuTargets(registry);
    context = std::make_unique<MLIRContext>(registry,
                                            MLIRContext::Threading::DISABLED);
    context->loadAllAvailableDialects();
    // Bad input is expected: its diagnostics are not findings, unless an
    // error comes without a place in the input.
    context->getDiagEngine().registerHandler([](Diagnostic &diagnostic) {
      if (diagnostic.getSeverity() == DiagnosticSeverity::Error)
        ::tile::fuzz::checkLocated(diagnostic.getLocation(), diagnostic.str());
      return success();
    });
    inputs = 1;
  }
};
Context shared;
} // namespace

namespace tile::fuzz {

namespace {
/// Whether the input being run names locations of its own (`loc(...)`,
/// `#loc`): an error at a location it wrote as unknown is its own doing.
bool inputWritesLocations = false;
} // namespace

void checkLocated(Location loc, llvm::StringRef message) {
  if (inputWritesLocations)
    return;
  bool located = false;
  loc->walk([&](Location inner) {
    located |= isa<FileLineColLoc>(inner);
    return located ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (located)
    return;
  llvm::errs() << "an error without a location: " << message << "\n";
  std::abort();
}

void checkLocated(llvm::Error error) {
  std::string message = llvm::toString(std::move(error));
  if (inputWritesLocations ||
      llvm::StringRef(message).starts_with(kInputName.str() + ":"))
    return;
  llvm::errs() << "an error without a location: " << message << "\n";
  std::abort();
}

OwningOpRef<ModuleOp> parse(const uint8_t *data, size_t size) {
  MLIRContext &context = *shared.context;
  llvm::SourceMgr sourceMgr;
  unsigned id = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          kInputName),
      llvm::SMLoc());
  if (mlir::tile::reportUnparsableInput(sourceMgr, id, &llvm::nulls()))
    return nullptr;
  // parseSourceFile verifies what it parsed.
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

int runHarness(const uint8_t *data, size_t size,
               void (*harness)(const uint8_t *, size_t)) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  inputWritesLocations = text.contains("loc(") || text.contains("#loc");
  return mlir::tile::runWithLargeStack([&] {
    shared.beginInput();
    harness(data, size);
    return 0;
  });
}

} // namespace tile::fuzz
