//===- ExpressionTest.cpp - manifest expressions, parsed once -------------===//

#include "Expression.h"

#include "gtest/gtest.h"

#include <string>

using namespace tile;
using namespace tile::ops;

namespace {
bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// The value of `text` with `env` bound (the parse must succeed).
rt::StatusOr<int64_t> value(const std::string &text,
                            const std::map<std::string, int64_t> &env) {
  rt::StatusOr<Expression> parsed = Expression::parse(text);
  EXPECT_TRUE(parsed) << text << ": " << parsed.message();
  return parsed ? parsed->evaluate(env)
                : rt::StatusOr<int64_t>(parsed.takeStatus());
}

TEST(ExpressionTest, ArithmeticAndCalls) {
  std::map<std::string, int64_t> env = {{"rows", 7}, {"w0", 13}, {"ctas", 3}};
  EXPECT_EQ(*value("(w0 / 2) + (w0 / 2)", env), 12);
  EXPECT_EQ(*value("min(rows, 264)", env), 7);
  EXPECT_EQ(*value("max(rows, w0)", env), 13);
  EXPECT_EQ(*value("ceildiv(w0, 4)", env), 4);
  EXPECT_EQ(*value("ctas * w0 + 1 - 2 % 2", env), 40);
  EXPECT_EQ(*value("10 - 3 - 2", env), 5); // left to right
  EXPECT_EQ(*value(" 42 ", env), 42);
}

TEST(ExpressionTest, ParsedOnceEvaluatedWithAnyBinding) {
  rt::StatusOr<Expression> grid = Expression::parse("ceildiv(rows * w0, 1024)");
  ASSERT_TRUE(grid) << grid.message();
  EXPECT_EQ(grid->text(), "ceildiv(rows * w0, 1024)");
  EXPECT_EQ(grid->symbol(), nullptr);
  EXPECT_EQ(*grid->evaluate({{"rows", 4}, {"w0", 1000}}), 4);
  EXPECT_EQ(*grid->evaluate({{"rows", 4096}, {"w0", 4096}}), 16384);
  rt::StatusOr<Expression> rows = Expression::parse("rows");
  ASSERT_TRUE(rows && rows->symbol());
  EXPECT_EQ(*rows->symbol(), "rows");
}

TEST(ExpressionTest, MalformedTextFailsToParse) {
  for (const char *text :
       {"frob(1, 2)", "(w0", "w0 +", "min(1)", "min(1, 2", "w0 w1", ""})
    EXPECT_FALSE(Expression::parse(text)) << text;
  EXPECT_TRUE(contains(Expression::parse("frob(1, 2)").message(),
                       "unknown function 'frob'"));
  EXPECT_TRUE(contains(Expression::parse("99999999999999999999").message(),
                       "overflows"));
}

TEST(ExpressionTest, EvaluationErrorsAreStatuses) {
  std::map<std::string, int64_t> env = {{"w0", 13}, {"big", int64_t(1) << 62}};
  EXPECT_TRUE(contains(value("w9", env).message(), "unbound symbol 'w9'"));
  EXPECT_TRUE(
      contains(value("w0 / (w0 - 13)", env).message(), "division by zero"));
  EXPECT_TRUE(contains(value("w0 % 0", env).message(), "division by zero"));
  EXPECT_TRUE(contains(value("big * 4", env).message(), "overflows"));
  EXPECT_TRUE(contains(value("ceildiv(w0, 0)", env).message(), "ceildiv by 0"));
  EXPECT_FALSE(Expression().evaluate(env));
}
} // namespace
