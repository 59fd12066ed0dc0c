//===- Expression.cpp - parse manifest expressions once, evaluate often ---===//

#include "Expression.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>

namespace tile::ops {

using rt::Status;
using rt::StatusOr;

/// A number, a symbol, a binary operator or a two-argument call.
struct Expression::Node {
  enum class Kind { Number, Symbol, Binary, Call };
  Kind kind = Kind::Number;
  int64_t number = 0;
  /// A symbol's or a call's name.
  std::string name;
  /// A binary operator: one of + - * / %.
  char op = 0;
  std::shared_ptr<const Node> left, right;
};

namespace {
using Node = Expression::Node;
using NodePtr = std::shared_ptr<const Node>;

NodePtr leaf(Node::Kind kind, int64_t number, std::string name) {
  auto node = std::make_shared<Node>();
  node->kind = kind;
  node->number = number;
  node->name = std::move(name);
  return node;
}

NodePtr inner(Node::Kind kind, char op, std::string name, NodePtr left,
              NodePtr right) {
  auto node = std::make_shared<Node>();
  node->kind = kind;
  node->op = op;
  node->name = std::move(name);
  node->left = std::move(left);
  node->right = std::move(right);
  return node;
}

/// Recursive descent: sum := product (('+' | '-') product)*,
/// product := atom (('*' | '/' | '%') atom)*, atom := integer | symbol |
/// name '(' sum ',' sum ')' | '(' sum ')'.
class Parser {
public:
  explicit Parser(const std::string &text) : text(text) {}

  StatusOr<NodePtr> parse() {
    StatusOr<NodePtr> tree = sum();
    skip();
    if (tree && pos != text.size())
      return error("unexpected '" + text.substr(pos) + "'");
    return tree;
  }

private:
  Status error(const std::string &what) const {
    return Status::error(what + " in '" + text + "'");
  }
  void skip() {
    while (pos < text.size() && std::isspace(text[pos]))
      ++pos;
  }
  bool eat(char c) {
    skip();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  /// One of `ops` next, consumed; else 0.
  char eatOneOf(const char *ops) {
    skip();
    if (pos < text.size() && std::strchr(ops, text[pos])) {
      ++pos;
      return text[pos - 1];
    }
    return 0;
  }
  /// One precedence level: operand (op operand)*, left to right.
  StatusOr<NodePtr> level(const char *ops,
                          StatusOr<NodePtr> (Parser::*operand)()) {
    StatusOr<NodePtr> left = (this->*operand)();
    while (left) {
      char op = eatOneOf(ops);
      if (!op)
        break;
      StatusOr<NodePtr> right = (this->*operand)();
      if (!right)
        return right;
      left = inner(Node::Kind::Binary, op, "", *left, *right);
    }
    return left;
  }
  StatusOr<NodePtr> sum() { return level("+-", &Parser::product); }
  StatusOr<NodePtr> product() { return level("*/%", &Parser::atom); }
  StatusOr<NodePtr> atom() {
    skip();
    if (eat('(')) {
      StatusOr<NodePtr> tree = sum();
      if (tree && !eat(')'))
        return error("missing ')'");
      return tree;
    }
    size_t start = pos;
    if (pos < text.size() && std::isdigit(text[pos])) {
      int64_t value = 0;
      for (; pos < text.size() && std::isdigit(text[pos]); ++pos)
        if (__builtin_mul_overflow(value, 10, &value) ||
            __builtin_add_overflow(value, text[pos] - '0', &value))
          return Status::error("'" + text + "' overflows 64-bit integers");
      return leaf(Node::Kind::Number, value, "");
    }
    while (pos < text.size() && (std::isalnum(text[pos]) || text[pos] == '_'))
      ++pos;
    std::string name = text.substr(start, pos - start);
    if (name.empty())
      return error("expected a value at '" + text.substr(start) + "'");
    if (!eat('('))
      return leaf(Node::Kind::Symbol, 0, std::move(name));
    if (name != "min" && name != "max" && name != "ceildiv")
      return error("unknown function '" + name + "'");
    StatusOr<NodePtr> a = sum();
    if (!a)
      return a;
    if (!eat(','))
      return error("expected ','");
    StatusOr<NodePtr> b = sum();
    if (!b)
      return b;
    if (!eat(')'))
      return error("expected ')'");
    return inner(Node::Kind::Call, 0, std::move(name), *a, *b);
  }

  const std::string &text;
  size_t pos = 0;
};

class Evaluator {
public:
  Evaluator(const std::string &text,
            const std::map<std::string, int64_t> &symbols)
      : text(text), symbols(symbols) {}

  StatusOr<int64_t> operator()(const Node &node) const {
    switch (node.kind) {
    case Node::Kind::Number:
      return node.number;
    case Node::Kind::Symbol: {
      auto it = symbols.find(node.name);
      if (it == symbols.end())
        return Status::error("unbound symbol '" + node.name + "' in '" + text +
                             "'");
      return it->second;
    }
    case Node::Kind::Binary:
    case Node::Kind::Call:
      break;
    }
    StatusOr<int64_t> a = (*this)(*node.left);
    if (!a)
      return a;
    StatusOr<int64_t> b = (*this)(*node.right);
    if (!b)
      return b;
    if (node.kind == Node::Kind::Call) {
      if (node.name == "min")
        return std::min(*a, *b);
      if (node.name == "max")
        return std::max(*a, *b);
      if (*b <= 0)
        return Status::error("ceildiv by " + std::to_string(*b) + " in '" +
                             text + "'");
      return *a / *b + (*a % *b > 0 ? 1 : 0);
    }
    int64_t value = 0;
    switch (node.op) {
    case '+':
      if (__builtin_add_overflow(*a, *b, &value))
        return overflow();
      return value;
    case '-':
      if (__builtin_sub_overflow(*a, *b, &value))
        return overflow();
      return value;
    case '*':
      // Shapes near 2^63 must not wrap into a constraint that holds.
      if (__builtin_mul_overflow(*a, *b, &value))
        return overflow();
      return value;
    default:
      if (*b == 0)
        return Status::error("division by zero in '" + text + "'");
      if (*a == std::numeric_limits<int64_t>::min() && *b == -1)
        return overflow();
      return node.op == '/' ? *a / *b : *a % *b;
    }
  }

private:
  Status overflow() const {
    return Status::error("'" + text + "' overflows 64-bit integers");
  }

  const std::string &text;
  const std::map<std::string, int64_t> &symbols;
};
} // namespace

StatusOr<Expression> Expression::parse(const std::string &text) {
  StatusOr<NodePtr> tree = Parser(text).parse();
  if (!tree)
    return tree.takeStatus();
  Expression expression;
  expression.root = std::move(*tree);
  expression.source = text;
  return expression;
}

StatusOr<int64_t>
Expression::evaluate(const std::map<std::string, int64_t> &symbols) const {
  if (!root)
    return Status::error("an empty expression");
  return Evaluator(source, symbols)(*root);
}

const std::string *Expression::symbol() const {
  return root && root->kind == Node::Kind::Symbol ? &root->name : nullptr;
}

} // namespace tile::ops
