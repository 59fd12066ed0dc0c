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
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/thread.h"

using namespace mlir;

namespace {
bool isIdentifierChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
}

/// `i` moved past what MLIR's lexer skips between tokens: white space, a NUL
/// byte (skipped like white space unless it ends the buffer) and `//`
/// comments.
size_t skipTrivia(llvm::StringRef text, size_t i) {
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0') {
      ++i;
    } else if (text.substr(i).starts_with("//")) {
      while (i < text.size() && text[i] != '\n')
        ++i;
    } else {
      break;
    }
  }
  return i;
}

/// The identifier at `i` (empty if none starts there).
llvm::StringRef identifierAt(llvm::StringRef text, size_t i) {
  size_t end = i;
  while (end < text.size() && isIdentifierChar(text[end]))
    ++end;
  return text.slice(i, end);
}

/// Whether `text` at `i` starts a word (an identifier not inside a longer
/// one) equal to `word`.
bool isWordAt(llvm::StringRef text, size_t i, llvm::StringRef word) {
  return (i == 0 || !isIdentifierChar(text[i - 1])) &&
         identifierAt(text, i) == word;
}

/// The type aliases seen so far that name `index` (`!t = index`, and
/// `!u = !t` after it): MLIR resolves an alias only after its definition,
/// so one pass in text order finds every one a dense array can use.
class IndexAliases {
public:
  /// Records the alias defined at `i` (at `!`, at nesting depth 0) if its
  /// type is index or an index alias.
  void noteDefinition(llvm::StringRef text, size_t i) {
    llvm::StringRef name = identifierAt(text, i + 1);
    if (name.empty())
      return;
    size_t next = skipTrivia(text, i + 1 + name.size());
    if (next >= text.size() || text[next] != '=')
      return;
    if (namesIndex(text, skipTrivia(text, next + 1)))
      aliases.insert(name);
  }

  /// Whether the type at `i` is `index` or an alias of it.
  bool namesIndex(llvm::StringRef text, size_t i) const {
    if (i >= text.size())
      return false;
    if (text[i] == '!')
      return aliases.contains(identifierAt(text, i + 1));
    return isWordAt(text, i, "index");
  }

private:
  llvm::StringSet<> aliases;
};

/// Whether `text` at `i` starts a dense array of index (`array<index`, with
/// anything MLIR's lexer skips around the `<`, or an alias of index), on
/// which MLIR 22's parser crashes: it asks index for a bit width.
bool isIndexDenseArray(llvm::StringRef text, size_t i,
                       const IndexAliases &indexAliases) {
  if (!isWordAt(text, i, "array"))
    return false;
  size_t open = skipTrivia(text, i + 5);
  if (open >= text.size() || text[open] != '<')
    return false;
  return indexAliases.namesIndex(text, skipTrivia(text, open + 1));
}
} // namespace

std::optional<tile::UnparsableInput>
tile::findUnparsableInput(llvm::StringRef text) {
  IndexAliases indexAliases;
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
    case '!':
      if (depth == 0 && (i == 0 || !isIdentifierChar(text[i - 1])))
        indexAliases.noteDefinition(text, i);
      break;
    case 'a':
      if (isIndexDenseArray(text, i, indexAliases))
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
