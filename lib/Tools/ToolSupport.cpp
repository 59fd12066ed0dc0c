//===- ToolSupport.cpp - the gate before the parser, and a large stack ---===//
//
// The scan before MLIR's parser is a lexer's view, not a parser's: it needs
// to be right only about text that nests deeply or that MLIR's parser
// crashes on, and errs on the safe side elsewhere (an unbalanced `<` in some
// odd attribute only makes a count larger).
//
//===----------------------------------------------------------------------===//

#include "tile/Tools/ToolSupport.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/thread.h"

using namespace mlir;

namespace {
bool isIdentifierChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
}

/// Whether `text` at `i` starts `array<index` (spaces allowed before the
/// type): a dense array of index, on which MLIR 22's parser crashes (it asks
/// index for a bit width).
bool isIndexDenseArray(llvm::StringRef text, size_t i) {
  if (!text.substr(i).starts_with("array<") ||
      (i > 0 && isIdentifierChar(text[i - 1])))
    return false;
  llvm::StringRef rest = text.substr(i + 6).ltrim(" \t\r\n");
  return rest.starts_with("index") &&
         (rest.size() == 5 || !isIdentifierChar(rest[5]));
}
} // namespace

std::optional<tile::UnparsableInput>
tile::findUnparsableInput(llvm::StringRef text) {
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
        return UnparsableInput{i, "nesting deeper than " +
                                      std::to_string(kMaxNesting) +
                                      " levels of brackets; Tile refuses "
                                      "input this deep"};
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
    case 'a':
      if (isIndexDenseArray(text, i))
        return UnparsableInput{
            i, "a dense array of index (array<index: ...>) is not "
               "supported: MLIR 22's parser crashes on it; use i64"};
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

bool tile::reportUnparsableInput(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                                 llvm::raw_ostream *os) {
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  std::optional<UnparsableInput> found =
      findUnparsableInput(buffer->getBuffer());
  if (!found)
    return false;
  llvm::SMLoc loc =
      llvm::SMLoc::getFromPointer(buffer->getBufferStart() + found->offset);
  sourceMgr.PrintMessage(os ? *os : llvm::errs(), loc,
                         llvm::SourceMgr::DK_Error, found->message);
  return true;
}

int tile::runWithLargeStack(llvm::function_ref<int()> body) {
  int result = 1;
  llvm::thread worker(std::optional<unsigned>(kToolStackBytes),
                      [&] { result = body(); });
  worker.join();
  return result;
}
