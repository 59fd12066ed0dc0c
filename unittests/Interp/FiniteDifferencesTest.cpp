//===- FiniteDifferencesTest.cpp - numerical gradients vs hand-derived ---===//
//
// The numerical VJPs that derived gradients will be checked against must
// themselves be right: here they are compared with the gradients of SwiGLU,
// silu_and_mul and RMSNorm worked out by hand:
//
//   SwiGLU   da = dc·b·σ(a)·(1 + a·(1 − σ(a))),  db = dc·silu(a)
//   RMSNorm  g = dy·(w + offset), dx = rstd·(g − x̂·mean(x̂·g)),
//            dw = Σ_rows dy·x̂   (a cross-row reduction)
//
//===----------------------------------------------------------------------===//

#include "tile/Interp/FiniteDifferences.h"
#include "KernelFixture.h"
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

using ::tile::testing::sigmoid;

/// max |got − want| / max(max |want|, floor): robust where single elements
/// are near 0. `floor` is the scale of the gradient's terms, for gradients
/// that cancel to far below it (RMSNorm at width 1: dx = rstd·(1 − x̂²)·g
/// with x̂² ≈ 1, whose finite difference carries an absolute error relative
/// to rstd·g, not to the tiny result).
double normRelativeError(const std::vector<double> &got,
                         const std::vector<double> &want, double floor = 0) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0.0, scale = floor;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return scale == 0.0 ? worst : worst / scale;
}

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
    std::vector<double> da(a.values.size()), db(a.values.size());
    for (size_t i = 0; i < da.size(); ++i) {
      double s = sigmoid(a.values[i]);
      da[i] = dc.values[i] * b.values[i] * s * (1.0 + a.values[i] * (1.0 - s));
      db[i] = dc.values[i] * a.values[i] * s;
    }
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
    std::vector<double> dx(x.values.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < width; ++j) {
        double a = x.values[r * 2 * width + j];
        double b = x.values[r * 2 * width + width + j];
        double g = dc.values[r * width + j], s = sigmoid(a);
        dx[r * 2 * width + j] = g * b * s * (1.0 + a * (1.0 - s));
        dx[r * 2 * width + width + j] = g * a * s;
      }
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
      std::vector<double> dx(x.values.size()), dw(width, 0.0);
      double termScale = 0.0; // max rstd·|g|: the size of dx's terms
      for (int64_t r = 0; r < rows; ++r) {
        const double *xr = &x.values[r * width];
        const double *dyr = &dy.values[r * width];
        double squares = 0;
        for (int64_t j = 0; j < width; ++j)
          squares += xr[j] * xr[j];
        double rstd = 1.0 / std::sqrt(squares / width + eps);
        double dot = 0;
        for (int64_t j = 0; j < width; ++j)
          dot += xr[j] * rstd * dyr[j] * (w.values[j] + offset);
        for (int64_t j = 0; j < width; ++j) {
          double xhat = xr[j] * rstd;
          double g = dyr[j] * (w.values[j] + offset);
          dx[r * width + j] = rstd * (g - xhat * dot / width);
          termScale = std::max(termScale, rstd * std::fabs(g));
          dw[j] += dyr[j] * xhat;
        }
      }
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
  EXPECT_EQ(llvm::toString(tooMany.takeError()),
            "@swiglu has 1 results but 2 cotangents were given");
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
