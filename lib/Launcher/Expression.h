//===- Expression.h - a manifest expression, parsed once --------*- C++ -*-===//
//
// The manifest writes sizes, grids, constraints and the workspace as
// expressions over the call's symbols: `rows`, `w<i>` (argument i's width),
// `arg<i>` (integer argument i) and `ctas`. ManifestReader.cpp parses each
// once into a tree; a launch only evaluates trees.
//
//===----------------------------------------------------------------------===//
#ifndef TILE_LIB_LAUNCHER_EXPRESSION_H
#define TILE_LIB_LAUNCHER_EXPRESSION_H

#include "tile/Runtime/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace tile::ops {

/// Integers, symbols, `+ - * / %` (C's truncating division), parentheses
/// and min/max/ceildiv calls: the whole language the manifest writes.
class Expression {
public:
  /// The tree of `text`; an error names what is wrong and where.
  static rt::StatusOr<Expression> parse(const std::string &text);

  /// Its value with `symbols` bound. A symbol not bound is an error whose
  /// message starts "unbound symbol" (the launcher tells those apart);
  /// overflow and division by zero are errors too.
  rt::StatusOr<int64_t>
  evaluate(const std::map<std::string, int64_t> &symbols) const;

  /// As the manifest wrote it (messages, the C API).
  const std::string &text() const { return source; }

  /// The symbol's name where the whole expression is one symbol (a shape
  /// that binds it), else null.
  const std::string *symbol() const;

  struct Node;

private:
  std::shared_ptr<const Node> root;
  std::string source;
};

} // namespace tile::ops

#endif // TILE_LIB_LAUNCHER_EXPRESSION_H
