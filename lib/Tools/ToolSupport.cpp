//===- ToolSupport.cpp - the gate before the parser, and a large stack ---===//
//
// The scan before MLIR's parser is a lexer's view, not a parser's: it needs
// to be right only about text that nests deeply or that MLIR's parser
// crashes on, and errs on the safe side elsewhere (an unbalanced `<` in some
// odd attribute only makes a count larger; a type alias of index is
// recorded wherever it appears). Where it reads tokens it reads them as
// MLIR's lexer does: comments end at a line feed or a carriage return, a
// NUL byte is white space, names after `!`, `#`, `%`, `^`, `@` may hold
// `-`, and a number ends where its digits do.
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
/// A character of a bare identifier or keyword (MLIR's bare-id).
bool isIdentifierChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
}

/// A character of the name after `!`, `#`, `%`, `^` or `@` (MLIR's
/// suffix-id), which may hold `-` too.
bool isSuffixChar(char c) { return isIdentifierChar(c) || c == '-'; }

/// The end of a `//` comment starting at `i`: MLIR's lexer ends one at a
/// line feed or a carriage return.
size_t endOfComment(llvm::StringRef text, size_t i) {
  while (i < text.size() && text[i] != '\n' && text[i] != '\r')
    ++i;
  return i;
}

/// `i` moved past what MLIR's lexer skips between tokens: white space, a NUL
/// byte (skipped like white space unless it ends the buffer) and `//`
/// comments.
size_t skipTrivia(llvm::StringRef text, size_t i) {
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0')
      ++i;
    else if (text.substr(i).starts_with("//"))
      i = endOfComment(text, i);
    else
      break;
  }
  return i;
}

/// The run of characters at `i` that `isChar` accepts.
llvm::StringRef runAt(llvm::StringRef text, size_t i, bool (*isChar)(char)) {
  size_t end = i;
  while (end < text.size() && isChar(text[end]))
    ++end;
  return text.slice(i, end);
}

/// The name after a prefix at `i - 1`: digits alone (`%0`), or a
/// suffix-id (`!a-b`), as MLIR's lexer reads it.
llvm::StringRef suffixIdAt(llvm::StringRef text, size_t i) {
  if (i < text.size() && llvm::isDigit(text[i]))
    return runAt(text, i, llvm::isDigit);
  return runAt(text, i, isSuffixChar);
}

/// The token at `i`, which starts with an identifier character: a number's
/// digits (MLIR's lexer ends a number where the digits end) or a bare word.
llvm::StringRef wordAt(llvm::StringRef text, size_t i) {
  return runAt(text, i,
               llvm::isDigit(text[i]) ? llvm::isDigit : isIdentifierChar);
}

/// The type aliases that name `index` (`!t = index`, and `!u = !t` after
/// it). MLIR resolves an alias only after its definition, so one pass in
/// text order finds every one a dense array can use; a later definition of
/// the same name (another --split-input-file chunk) replaces it.
class IndexAliases {
public:
  /// Records the alias defined at `i` (at `!`) if its type is index or an
  /// index alias, forgets the name otherwise.
  void noteDefinition(llvm::StringRef text, size_t i) {
    llvm::StringRef name = suffixIdAt(text, i + 1);
    if (name.empty())
      return;
    size_t next = skipTrivia(text, i + 1 + name.size());
    if (next >= text.size() || text[next] != '=')
      return;
    if (namesIndex(text, skipTrivia(text, next + 1)))
      aliases.insert(name);
    else
      aliases.erase(name);
  }

  /// Whether the type at `i` is `index` or an alias of it.
  bool namesIndex(llvm::StringRef text, size_t i) const {
    if (i >= text.size())
      return false;
    if (text[i] == '!')
      return aliases.contains(suffixIdAt(text, i + 1));
    return runAt(text, i, isIdentifierChar) == "index";
  }

private:
  llvm::StringSet<> aliases;
};

/// Whether the text after an `array` keyword, at `i`, makes it a dense
/// array of index (`<index`, with anything MLIR's lexer skips around the
/// `<`, or an alias of index), on which MLIR 22's parser crashes: it asks
/// index for a bit width.
bool opensIndexDenseArray(llvm::StringRef text, size_t i,
                          const IndexAliases &indexAliases) {
  size_t open = skipTrivia(text, i);
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
        i = endOfComment(text, i);
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
        break; // `->` (a name's trailing `-` was skipped with the name)
      [[fallthrough]];
    case ')':
    case ']':
    case '}':
      depth = depth > 0 ? depth - 1 : 0;
      break;
    case '!':
    case '#':
    case '%':
    case '^':
    case '@':
      // A prefixed name, skipped whole (`#array<...>` is an opaque
      // attribute, not a dense array; `!e->` closes a bracket). A type
      // alias is recorded wherever it appears: at worst that refuses
      // input that was malformed anyway.
      if (c == '!')
        indexAliases.noteDefinition(text, i);
      i += suffixIdAt(text, i + 1).size();
      break;
    default:
      if (isIdentifierChar(c)) {
        // A bare word (or a number): a keyword may start a dense array.
        llvm::StringRef word = wordAt(text, i);
        if (word == "array" &&
            opensIndexDenseArray(text, i + word.size(), indexAliases))
          return UnparsableInput{
              i, "a dense array of index (array<index: ...>) is not "
                 "supported: MLIR 22's parser crashes on it; use i64"};
        i += word.size() - 1;
      }
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
