//===- ToolSupport.cpp - nesting bound and a large stack for the tools ---===//
//
// The nesting scan is a lexer's view, not a parser's: it needs to be right
// only about text that nests deeply, and errs on the safe side elsewhere
// (an unbalanced `<` in some odd attribute only makes a count larger).
//
//===----------------------------------------------------------------------===//

#include "tile/Tools/ToolSupport.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/thread.h"

using namespace mlir;

std::optional<size_t> tile::findExcessiveNesting(llvm::StringRef text) {
  int64_t depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    switch (c) {
    case '"':
      // A string: up to the closing quote, past escapes.
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      break;
    case '/':
      if (i + 1 < e && text[i + 1] == '/')
        while (i < e && text[i] != '\n')
          ++i;
      break;
    case '(':
    case '[':
    case '{':
    case '<':
      if (++depth > kMaxNesting)
        return i;
      break;
    case '>':
      if (i > 0 && text[i - 1] == '-')
        break; // `->`
      [[fallthrough]];
    case ')':
    case ']':
    case '}':
      depth = depth > 0 ? depth - 1 : 0;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

bool tile::reportExcessiveNesting(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                                  llvm::raw_ostream *os) {
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  std::optional<size_t> at = findExcessiveNesting(buffer->getBuffer());
  if (!at)
    return false;
  llvm::SMLoc loc = llvm::SMLoc::getFromPointer(buffer->getBufferStart() + *at);
  sourceMgr.PrintMessage(os ? *os : llvm::errs(), loc,
                         llvm::SourceMgr::DK_Error,
                         "nesting deeper than " + std::to_string(kMaxNesting) +
                             " levels of brackets; Tile refuses input this "
                             "deep");
  return true;
}

int tile::runWithLargeStack(llvm::function_ref<int()> body) {
  int result = 1;
  llvm::thread worker(std::optional<unsigned>(kToolStackBytes),
                      [&] { result = body(); });
  worker.join();
  return result;
}
