//===- RowShiftTest.cpp - arithmetic on first-order per-row changes ------===//

#include "tile/Dialect/Tile/IR/RowShift.h"

#include <gtest/gtest.h>

using mlir::tile::RowShift;

namespace {

const RowShift kNone = RowShift::none();
const RowShift kUnknown = RowShift::unknown();

TEST(RowShiftTest, ZeroCoefficientsAreNone) {
  EXPECT_EQ(RowShift::offset(0.0), kNone);
  EXPECT_EQ(RowShift::factor(0.0), kNone);
}

TEST(RowShiftTest, OffsetsAdd) {
  RowShift x = kNone, m = RowShift::offset(1.0);
  EXPECT_EQ(RowShift::sub(x, m), RowShift::offset(-1.0));
  EXPECT_EQ(RowShift::add(RowShift::offset(-1.0), m), kNone);
  EXPECT_EQ(RowShift::neg(RowShift::offset(2.0)), RowShift::offset(-2.0));
}

TEST(RowShiftTest, FactorsMultiply) {
  RowShift e = RowShift::exp(RowShift::offset(-1.0));
  EXPECT_EQ(e, RowShift::factor(-1.0));
  EXPECT_EQ(RowShift::div(e, e), kNone);
  EXPECT_EQ(RowShift::mul(e, e), RowShift::factor(-2.0));
  EXPECT_EQ(RowShift::mul(e, kNone), e);
  EXPECT_EQ(RowShift::div(kNone, e), RowShift::factor(1.0));
  EXPECT_EQ(RowShift::log(e), RowShift::offset(-1.0));
  EXPECT_EQ(RowShift::pow(RowShift::factor(-1.0), 0.5), RowShift::factor(-0.5));
  // A negation scales by a constant: the factor stays.
  EXPECT_EQ(RowShift::neg(e), e);
}

TEST(RowShiftTest, SoftmaxAndLogsumexpCancel) {
  RowShift m = RowShift::offset(1.0);
  RowShift e = RowShift::exp(RowShift::sub(kNone, m));
  RowShift s = e; // a row sum of a factor keeps it
  EXPECT_EQ(RowShift::div(e, s), kNone);
  EXPECT_EQ(RowShift::add(RowShift::log(s), m), kNone);
}

TEST(RowShiftTest, MixedFormsAreUnknown) {
  RowShift d = RowShift::offset(-1.0), e = RowShift::factor(-1.0);
  // (x - m)·t and (x - m)²: a shift times a value.
  EXPECT_TRUE(RowShift::mul(d, kNone).isUnknown());
  EXPECT_TRUE(RowShift::mul(d, d).isUnknown());
  // A shifted value plus a scaled one, a scaled one plus an unscaled one.
  EXPECT_TRUE(RowShift::add(d, e).isUnknown());
  EXPECT_TRUE(RowShift::add(e, kNone).isUnknown());
  EXPECT_TRUE(RowShift::exp(e).isUnknown());
  EXPECT_TRUE(RowShift::log(d).isUnknown());
  // Unknown stays unknown through every rule.
  EXPECT_TRUE(RowShift::add(kUnknown, kNone).isUnknown());
  EXPECT_TRUE(RowShift::div(kNone, kUnknown).isUnknown());
  EXPECT_TRUE(RowShift::neg(kUnknown).isUnknown());
}

TEST(RowShiftTest, SameAndOpaque) {
  RowShift e = RowShift::factor(-1.0);
  EXPECT_EQ(RowShift::same({e, e}), e);
  EXPECT_TRUE(RowShift::same({e, kNone}).isUnknown());
  EXPECT_EQ(RowShift::same({}), kNone);
  EXPECT_EQ(RowShift::opaque({kNone, kNone}), kNone);
  EXPECT_TRUE(RowShift::opaque({kNone, e}).isUnknown());
}

} // namespace
