//===- FiniteDifferencesTest.cpp - numerical gradients vs hand-derived ---===//
//
// The numerical VJPs that derived gradients are checked against must
// themselves be right: here they are compared with the gradients of SwiGLU,
// silu_and_mul and RMSNorm worked out by hand (ClosedForms.h).
//
//===----------------------------------------------------------------------===//

#include "tile/Interp/FiniteDifferences.h"
#include "ClosedForms.h"
#include "tile/Interp/Inputs.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir;
namespace interp = ::tile::interp;
using interp::Buffer;
using interp::StorageType;

namespace {
using FiniteDifferencesTest = ::tile::testing::KernelFixture;

Buffer randomTensor(std::vector<int64_t> shape, interp::Random &random) {
  return ::tile::testing::randomTensor(std::move(shape), random, -2.0, 2.0);
}

using ::tile::testing::normRelativeError;

interp::Buffer vjp(func::FuncOp func, const std::vector<Buffer> &args,
                   const std::vector<Buffer> &cotangents, unsigned index) {
  auto result = interp::finiteDifferenceVJP(func, args, cotangents, index);
  EXPECT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  return result ? *result : Buffer();
}

const std::vector<std::pair<int64_t, int64_t>> kShapes = {
    {1, 1}, {1, 13}, {3, 7}, {7, 1}};

TEST_F(FiniteDifferencesTest, SwiGLUGradient) {
  func::FuncOp func = loadExample("swiglu");
  ASSERT_TRUE(func);
  interp::Random random(11);
  for (auto [rows, width] : kShapes) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(width));
    Buffer a = randomTensor({rows, width}, random);
    Buffer b = randomTensor({rows, width}, random);
    Buffer dc = randomTensor({rows, width}, random);
    auto [da, db] = ::tile::testing::swigluGradient(a, b, dc);
    EXPECT_LE(normRelativeError(vjp(func, {a, b}, {dc}, 0).values, da), 1e-9);
    EXPECT_LE(normRelativeError(vjp(func, {a, b}, {dc}, 1).values, db), 1e-9);
  }
}

TEST_F(FiniteDifferencesTest, SiluAndMulGradientFillsBothHalves) {
  func::FuncOp func = loadExample("silu_and_mul");
  ASSERT_TRUE(func);
  interp::Random random(12);
  for (auto [rows, width] : kShapes) {
    SCOPED_TRACE(std::to_string(rows) + "x2*" + std::to_string(width));
    Buffer x = randomTensor({rows, 2 * width}, random);
    Buffer dc = randomTensor({rows, width}, random);
    std::vector<double> dx =
        ::tile::testing::siluAndMulGradient(x, dc, rows, width);
    EXPECT_LE(normRelativeError(vjp(func, {x}, {dc}, 0).values, dx), 1e-9);
  }
}

TEST_F(FiniteDifferencesTest, RMSNormGradientIncludingCrossRowDW) {
  func::FuncOp func = loadExample("rms_norm");
  ASSERT_TRUE(func);
  interp::Random random(13);
  for (double offset : {0.0, 1.0}) {
    for (auto [rows, width] : kShapes) {
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(width) +
                   " offset " + std::to_string(offset));
      double eps = 1e-6;
      Buffer x = randomTensor({rows, width}, random);
      Buffer w = randomTensor({width}, random);
      Buffer dy = randomTensor({rows, width}, random);
      std::vector<Buffer> args = {x, w, Buffer::scalar(eps),
                                  Buffer::scalar(offset)};
      auto [dx, dw, termScale] =
          ::tile::testing::rmsNormGradient(x, w, dy, eps, offset);
      EXPECT_LE(
          normRelativeError(vjp(func, args, {dy}, 0).values, dx, termScale),
          1e-8);
      EXPECT_LE(normRelativeError(vjp(func, args, {dy}, 1).values, dw), 1e-8);
    }
  }
}

TEST_F(FiniteDifferencesTest, DirectionalDerivativeIsVJPDotDirection) {
  func::FuncOp func = loadExample("swiglu");
  ASSERT_TRUE(func);
  interp::Random random(14);
  Buffer a = randomTensor({5, 9}, random), b = randomTensor({5, 9}, random);
  Buffer dc = randomTensor({5, 9}, random);
  Buffer va = randomTensor({5, 9}, random), vb = randomTensor({5, 9}, random);
  Buffer ga = vjp(func, {a, b}, {dc}, 0), gb = vjp(func, {a, b}, {dc}, 1);
  double expected = 0;
  for (size_t i = 0; i < ga.values.size(); ++i)
    expected += ga.values[i] * va.values[i] + gb.values[i] * vb.values[i];
  auto derivative = interp::directionalDerivative(func, {a, b}, {dc}, {va, vb});
  ASSERT_TRUE(static_cast<bool>(derivative))
      << llvm::toString(derivative.takeError());
  EXPECT_NEAR(*derivative, expected, 1e-8 * std::fabs(expected));
}

TEST_F(FiniteDifferencesTest, MismatchesAreErrors) {
  func::FuncOp func = loadExample("swiglu");
  ASSERT_TRUE(func);
  Buffer a = Buffer::tensor({2, 3}, StorageType::BF16);
  auto tooMany = interp::finiteDifferenceVJP(func, {a, a}, {a, a}, 0);
  ASSERT_FALSE(static_cast<bool>(tooMany));
  // At the function's place in swiglu.mlir.
  std::string message = llvm::toString(tooMany.takeError());
  EXPECT_NE(message.find("swiglu.mlir:3:1: error: @swiglu has 1 results but "
                         "2 cotangents were given"),
            std::string::npos)
      << message;
  Buffer small = Buffer::tensor({2, 2}, StorageType::BF16);
  auto wrongSize = interp::finiteDifferenceVJP(func, {a, a}, {small}, 0);
  ASSERT_FALSE(static_cast<bool>(wrongSize));
  EXPECT_EQ(llvm::toString(wrongSize.takeError()),
            "cotangent #0 has 4 elements but the result has 6");
  auto noArg = interp::finiteDifferenceVJP(func, {a, a}, {a}, 2);
  ASSERT_FALSE(static_cast<bool>(noArg));
  EXPECT_EQ(llvm::toString(noArg.takeError()), "argument #2 does not exist");
  auto badDirection = interp::directionalDerivative(func, {a, a}, {a}, {a});
  ASSERT_FALSE(static_cast<bool>(badDirection));
  EXPECT_EQ(llvm::toString(badDirection.takeError()),
            "the direction has 1 parts for 2 arguments");
}
} // namespace
