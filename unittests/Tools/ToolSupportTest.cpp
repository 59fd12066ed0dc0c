//===- ToolSupportTest.cpp - the gate before MLIR's parser ----------------===//
//
// Each spelling of a dense array of index that MLIR 22's parser crashes on
// (tools/tile-opt segfaulted on every one) is refused at the `array`
// keyword, and the near misses that the parser takes or refuses itself
// pass the gate. The NUL byte case cannot live in a lit test file.
//
//===----------------------------------------------------------------------===//

#include "tile/Tools/ToolSupport.h"

#include "gtest/gtest.h"

#include <string>

namespace {
/// A function whose attribute dictionary holds `attr`, after `prelude`.
std::string moduleWith(const std::string &attr,
                       const std::string &prelude = "") {
  return prelude + "func.func @f() attributes {a = " + attr +
         "} {\n  return\n}\n";
}

/// The offset of the finding, or -1 if the gate lets `text` through.
long findingOffset(const std::string &text) {
  auto found = mlir::tile::findUnparsableInput(text);
  return found ? static_cast<long>(found->offset) : -1;
}

TEST(FindUnparsableInput, RefusesEveryIndexDenseArrayAtItsKeyword) {
  const std::string cases[] = {
      moduleWith("array<index: 1>"),
      moduleWith("array< index: 1>"),
      moduleWith("array <index: 1>"),
      moduleWith("array<\n  // why\n  index: 1>"),
      moduleWith(std::string("array<\0index: 1>", 16)),
      moduleWith(std::string("array\0<index>", 13)),
      moduleWith("array<!t: 1>", "!t = index\n"),
      moduleWith("array<!u: 1>", "!t = index\n!u = !t\n"),
      moduleWith("array<!t: 1>", "!t = // why\n  index\n"),
      // A carriage return ends a comment, as a line feed does.
      moduleWith("//x\rarray<index: 1>"),
      moduleWith("array<//\rindex: 1>"),
      moduleWith("array<!t: 1>", "!t = //\rindex\n"),
      // Alias names with `-`, an alias right after another token, and an
      // alias after a name ending in `-` before a `>` (not an arrow).
      moduleWith("array<!a-b: 1>", "!a-b = index\n"),
      moduleWith("array<!t: 1>", "!s = index!t = index\n"),
      moduleWith("array<!t: 1>", "!e- = i32\n!c = tuple<!e->\n!t = index\n"),
  };
  for (const std::string &text : cases) {
    long offset = findingOffset(text);
    ASSERT_GE(offset, 0) << text;
    EXPECT_EQ(text.substr(offset, 5), "array") << text;
  }
}

TEST(FindUnparsableInput, LetsThroughWhatTheParserHandles) {
  const std::string cases[] = {
      moduleWith("array<i64: 1>"),
      moduleWith("array<indexed: 1>"), // not index (the parser refuses)
      moduleWith("myarray<index: 1>"), // not the array keyword
      moduleWith("array<!t: 1>", "!t = i64\n"),
      moduleWith("array<!index: 1>"),    // an alias named index, undefined
      moduleWith("\"array<index: 1>\""), // a string
      "// array<index: 1>\n" + moduleWith("array<i32: 1>"),
      moduleWith("#array<index: 1>"), // an opaque attribute
      moduleWith("array<!t-u: 1>", "!t = index\n!t-u = i64\n"),
      // A later chunk (--split-input-file) redefines the alias.
      moduleWith("array<!t: 1>", "!t = index\n// -----\n!t = i64\n"),
  };
  for (const std::string &text : cases)
    EXPECT_EQ(findingOffset(text), -1) << text;
}
} // namespace
