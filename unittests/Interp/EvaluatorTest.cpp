//===- EvaluatorTest.cpp - the reference evaluator against closed forms --===//
//
// The examples in examples/ are evaluated at regular and irregular shapes and
// compared with SwiGLU and RMSNorm written out by hand in double: in exact
// mode to 1e-12 relative error, and with bf16 rounding at the boundaries
// element for element.
//
//===----------------------------------------------------------------------===//

#include "tile/Interp/Evaluator.h"
#include "KernelFixture.h"
#include "tile/Interp/Inputs.h"

#include "gtest/gtest.h"

#include <cmath>
#include <functional>

using namespace mlir;
namespace interp = ::tile::interp;
using interp::Buffer;
using interp::StorageType;

namespace {
const std::vector<int64_t> kRows = {1, 7, 13, 333};
const std::vector<int64_t> kWidths = {1, 13, 100, 1000, 1500, 3000, 11008};

using EvaluatorTest = ::tile::testing::KernelFixture;

Buffer randomTensor(std::vector<int64_t> shape, interp::Random &random) {
  return ::tile::testing::randomTensor(std::move(shape), random, -3.0, 3.0);
}

std::vector<double> rounded(const std::vector<double> &values,
                            StorageType storage) {
  std::vector<double> out = values;
  for (double &value : out)
    value = interp::roundTo(storage, value);
  return out;
}

using ::tile::testing::sigmoid;

/// Max relative error, with an absolute floor for values near zero.
double maxRelativeError(const std::vector<double> &got,
                        const std::vector<double> &want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0.0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    double scale = std::max(std::fabs(want[i]), 1e-300);
    worst = std::max(worst, std::fabs(got[i] - want[i]) / scale);
    if (std::isnan(got[i]) != std::isnan(want[i]))
      return INFINITY;
  }
  return worst;
}

/// Compares bf16-rounded results: bitwise equal, except for values the two
/// float64 computations put on either side of a rounding boundary, which
/// must then be one bf16 step apart.
void expectBF16Match(const std::vector<double> &got,
                     const std::vector<double> &want) {
  ASSERT_EQ(got.size(), want.size());
  size_t differing = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i])
      continue;
    ++differing;
    ASSERT_LE(std::fabs(got[i] - want[i]),
              std::ldexp(std::fabs(want[i]), -7) + 1e-38)
        << "element " << i;
  }
  EXPECT_LE(differing, got.size() / 10000) << "too many rounding differences";
}

//===----------------------------------------------------------------------===//
// Closed forms
//===----------------------------------------------------------------------===//

std::vector<double> swigluClosedForm(const std::vector<double> &a,
                                     const std::vector<double> &b) {
  std::vector<double> c(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    c[i] = a[i] * sigmoid(a[i]) * b[i];
  return c;
}

std::vector<double> rmsNormClosedForm(const std::vector<double> &x,
                                      const std::vector<double> &w,
                                      int64_t rows, int64_t width, double eps,
                                      double offset) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    long double squares = 0;
    for (int64_t j = 0; j < width; ++j)
      squares += static_cast<long double>(x[r * width + j]) * x[r * width + j];
    double rstd = 1.0 / std::sqrt(static_cast<double>(squares / width) + eps);
    for (int64_t j = 0; j < width; ++j)
      y[r * width + j] = x[r * width + j] * rstd * (w[j] + offset);
  }
  return y;
}

//===----------------------------------------------------------------------===//
// Examples against closed forms
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, SwiGLUMatchesClosedForm) {
  func::FuncOp func = loadExample("swiglu");
  ASSERT_TRUE(func);
  interp::Random random(1);
  for (int64_t rows : kRows) {
    for (int64_t width : kWidths) {
      SCOPED_TRACE("shape " + std::to_string(rows) + "x" +
                   std::to_string(width));
      Buffer a = randomTensor({rows, width}, random);
      Buffer b = randomTensor({rows, width}, random);

      interp::EvalOptions exact;
      exact.roundStorage = false;
      auto results = interp::evaluate(func, {a, b}, exact);
      ASSERT_TRUE(static_cast<bool>(results))
          << llvm::toString(results.takeError());
      ASSERT_EQ(results->size(), 1u);
      EXPECT_EQ((*results)[0].shape, (std::vector<int64_t>{rows, width}));
      EXPECT_LE(maxRelativeError((*results)[0].values,
                                 swigluClosedForm(a.values, b.values)),
                1e-12);

      auto bf16 = interp::evaluate(func, {a, b});
      ASSERT_TRUE(static_cast<bool>(bf16)) << llvm::toString(bf16.takeError());
      std::vector<double> want =
          rounded(swigluClosedForm(rounded(a.values, StorageType::BF16),
                                   rounded(b.values, StorageType::BF16)),
                  StorageType::BF16);
      expectBF16Match((*bf16)[0].values, want);
    }
  }
}

TEST_F(EvaluatorTest, SiluAndMulMatchesClosedForm) {
  func::FuncOp func = loadExample("silu_and_mul");
  ASSERT_TRUE(func);
  interp::Random random(2);
  for (int64_t rows : kRows) {
    for (int64_t width : kWidths) {
      SCOPED_TRACE("shape " + std::to_string(rows) + "x2*" +
                   std::to_string(width));
      Buffer x = randomTensor({rows, 2 * width}, random);
      std::vector<double> a, b;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < 2 * width; ++j)
          (j < width ? a : b).push_back(x.values[r * 2 * width + j]);

      interp::EvalOptions exact;
      exact.roundStorage = false;
      auto results = interp::evaluate(func, {x}, exact);
      ASSERT_TRUE(static_cast<bool>(results))
          << llvm::toString(results.takeError());
      EXPECT_EQ((*results)[0].shape, (std::vector<int64_t>{rows, width}));
      EXPECT_LE(maxRelativeError((*results)[0].values, swigluClosedForm(a, b)),
                1e-12);

      auto bf16 = interp::evaluate(func, {x});
      ASSERT_TRUE(static_cast<bool>(bf16)) << llvm::toString(bf16.takeError());
      expectBF16Match((*bf16)[0].values,
                      rounded(swigluClosedForm(rounded(a, StorageType::BF16),
                                               rounded(b, StorageType::BF16)),
                              StorageType::BF16));
    }
  }
}

TEST_F(EvaluatorTest, RMSNormMatchesClosedForm) {
  func::FuncOp func = loadExample("rms_norm");
  ASSERT_TRUE(func);
  interp::Random random(3);
  for (double offset : {0.0, 1.0}) {
    for (int64_t rows : kRows) {
      for (int64_t width : kWidths) {
        SCOPED_TRACE("shape " + std::to_string(rows) + "x" +
                     std::to_string(width) + " offset " +
                     std::to_string(offset));
        double eps = 1e-6;
        Buffer x = randomTensor({rows, width}, random);
        Buffer w = randomTensor({width}, random);
        std::vector<Buffer> args = {x, w, Buffer::scalar(eps),
                                    Buffer::scalar(offset)};

        interp::EvalOptions exact;
        exact.roundStorage = false;
        auto results = interp::evaluate(func, args, exact);
        ASSERT_TRUE(static_cast<bool>(results))
            << llvm::toString(results.takeError());
        EXPECT_EQ((*results)[0].shape, (std::vector<int64_t>{rows, width}));
        EXPECT_LE(maxRelativeError((*results)[0].values,
                                   rmsNormClosedForm(x.values, w.values, rows,
                                                     width, eps, offset)),
                  1e-12);

        // With rounding, eps and the offset are f32 parameters as well.
        auto bf16 = interp::evaluate(func, args);
        ASSERT_TRUE(static_cast<bool>(bf16))
            << llvm::toString(bf16.takeError());
        expectBF16Match(
            (*bf16)[0].values,
            rounded(rmsNormClosedForm(
                        rounded(x.values, StorageType::BF16),
                        rounded(w.values, StorageType::BF16), rows, width,
                        interp::roundTo(StorageType::F32, eps), offset),
                    StorageType::BF16));
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Individual ops
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, ReductionsOverEveryDim) {
  func::FuncOp func = parse(R"mlir(
    func.func @r(%x: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?xf32>,
                                          tensor<?xf32>, tensor<f32>) {
      %0 = tile.reduce sum %x [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
      %1 = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
      %2 = tile.reduce min %x [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
      %3 = tile.reduce mean %x [0, 1] across_rows : tensor<?x?xf32> -> tensor<f32>
      return %0, %1, %2, %3 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<f32>
    })mlir",
                            "r");
  ASSERT_TRUE(func);
  Buffer x = Buffer::tensor({2, 3}, StorageType::F32, {1, -2, 3, 4, 5, -6});
  auto results = interp::evaluate(func, {x});
  ASSERT_TRUE(static_cast<bool>(results))
      << llvm::toString(results.takeError());
  EXPECT_EQ((*results)[0].values, (std::vector<double>{5, 3, -3}));
  EXPECT_EQ((*results)[1].values, (std::vector<double>{3, 5}));
  EXPECT_EQ((*results)[2].values, (std::vector<double>{1, -2, -6}));
  EXPECT_TRUE((*results)[3].shape.empty());
  EXPECT_DOUBLE_EQ((*results)[3].values[0], 5.0 / 6.0);
}

TEST_F(EvaluatorTest, PadAndReduceInto) {
  func::FuncOp func = parse(R"mlir(
    func.func @p(%g: tensor<?x?xf32>, %x: tensor<?x?xf32>, %acc: tensor<?xf32>)
        -> (tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>) {
      %c1 = arith.constant 1 : index
      %p = tile.pad %g [%c1] like %x : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
      %s = tile.reduce sum %x [0] across_rows into %acc : tensor<?x?xf32> -> tensor<?xf32>
      %m = tile.reduce max %x [0] across_rows into %acc : tensor<?x?xf32> -> tensor<?xf32>
      return %p, %s, %m : tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>
    })mlir",
                            "p");
  ASSERT_TRUE(func);
  Buffer g = Buffer::tensor({2, 1}, StorageType::F32, {7, 8});
  Buffer x = Buffer::tensor({2, 3}, StorageType::F32, {1, 2, 3, 4, 5, 6});
  Buffer acc = Buffer::tensor({3}, StorageType::F32, {100, 0, 10});
  auto results = interp::evaluate(func, {g, x, acc});
  ASSERT_TRUE(static_cast<bool>(results))
      << llvm::toString(results.takeError());
  EXPECT_EQ((*results)[0].values, (std::vector<double>{0, 7, 0, 0, 8, 0}));
  EXPECT_EQ((*results)[1].values, (std::vector<double>{105, 7, 19}));
  EXPECT_EQ((*results)[2].values, (std::vector<double>{100, 5, 10}));

  // A pad that leaves the row is an error, not a write past the end.
  Buffer wide = Buffer::tensor({2, 3}, StorageType::F32);
  auto bad = interp::evaluate(func, {wide, x, acc});
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("out of bounds"),
            std::string::npos);
}

TEST_F(EvaluatorTest, Contractions) {
  func::FuncOp func = parse(R"mlir(
    func.func @c(%x: tensor<?x?xf32>, %w: tensor<?x?xf32>, %m: tensor<?x?xf32>,
                 %acc: tensor<?x?xf32>)
        -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
      %y = tile.contract %x, %w over 1 : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
      %z = tile.contract %x, %m over 0 : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
      %r = tile.contract_rows %x, %y across_rows into %acc : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
      return %y, %z, %r : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
    })mlir",
                            "c");
  ASSERT_TRUE(func);
  Buffer x = Buffer::tensor({2, 3}, StorageType::F32, {1, 2, 3, 4, 5, 6});
  // W [2, 3] as a Linear's weight; M = Wᵀ [3, 2].
  Buffer w = Buffer::tensor({2, 3}, StorageType::F32, {1, 0, -1, 2, 1, 0});
  Buffer m = Buffer::tensor({3, 2}, StorageType::F32, {1, 2, 0, 1, -1, 0});
  Buffer acc = Buffer::tensor({3, 2}, StorageType::F32, {1, 1, 1, 1, 1, 1});
  auto results = interp::evaluate(func, {x, w, m, acc});
  ASSERT_TRUE(static_cast<bool>(results))
      << llvm::toString(results.takeError());
  EXPECT_EQ((*results)[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*results)[0].values, (std::vector<double>{-2, 4, -2, 13}));
  EXPECT_EQ((*results)[1].values, (std::vector<double>{-2, 4, -2, 13}));
  // xᵀ·y over the two rows, plus 1.
  EXPECT_EQ((*results)[2].shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ((*results)[2].values,
            (std::vector<double>{-9, 57, -13, 74, -17, 91}));

  // A width the matrix does not have is an error naming both sizes.
  Buffer narrow = Buffer::tensor({2, 4}, StorageType::F32);
  auto bad = interp::evaluate(func, {x, narrow, m, acc});
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError())
                .find("the input's width 3 differs from the matrix's "
                      "dimension 1 (4)"),
            std::string::npos);
}

TEST_F(EvaluatorTest, ContractionWorkIsBoundedAtRunTime) {
  // The operands are made in the kernel, four times as wide as the
  // argument: the estimate from the arguments passes, the contraction's
  // own count (144 sums of 2 products) does not.
  func::FuncOp func = parse(R"mlir(
    func.func @w(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
      %w = tile.concat %x, %x, %x, %x : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
      %r = tile.contract_rows %w, %w across_rows : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
      return %r : tensor<?x?xf32>
    })mlir",
                            "w");
  ASSERT_TRUE(func);
  Buffer x = Buffer::tensor({2, 3}, StorageType::F32, {1, 2, 3, 4, 5, 6});
  interp::EvalOptions small;
  small.maxElementOps = 100;
  ASSERT_LE(interp::estimateElementOps(func, {x}), small.maxElementOps);
  auto bad = interp::evaluate(func, {x}, small);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError())
                .find("takes 144 sums of 2 products, over the evaluator's "
                      "limit of 100"),
            std::string::npos);
  // Within the limit it runs: 12 x 12, each a sum of two products.
  auto good = interp::evaluate(func, {x});
  ASSERT_TRUE(static_cast<bool>(good)) << llvm::toString(good.takeError());
  EXPECT_EQ((*good)[0].shape, (std::vector<int64_t>{12, 12}));
  EXPECT_EQ((*good)[0].values[0], 1.0 * 1.0 + 4.0 * 4.0);
}

TEST_F(EvaluatorTest, BroadcastSliceConcat) {
  func::FuncOp func = parse(R"mlir(
    func.func @m(%x: tensor<?x?xf32>, %w: tensor<?xf32>, %r: tensor<?xf32>)
        -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %wb = tile.broadcast %w [0] like %x : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
      %rb = tile.broadcast %r [1] like %x : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
      %s = tile.slice %x [%c1, %c2] : tensor<?x?xf32> -> tensor<?x?xf32>
      %c = tile.concat %s, %x : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
      %sum = arith.addf %wb, %rb : tensor<?x?xf32>
      return %sum, %s, %c : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
    })mlir",
                            "m");
  ASSERT_TRUE(func);
  Buffer x = Buffer::tensor({2, 3}, StorageType::F32, {1, 2, 3, 4, 5, 6});
  Buffer w = Buffer::tensor({3}, StorageType::F32, {10, 20, 30});
  Buffer r = Buffer::tensor({2}, StorageType::F32, {100, 200});
  auto results = interp::evaluate(func, {x, w, r});
  ASSERT_TRUE(static_cast<bool>(results))
      << llvm::toString(results.takeError());
  EXPECT_EQ((*results)[0].values,
            (std::vector<double>{110, 120, 130, 210, 220, 230}));
  EXPECT_EQ((*results)[1].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*results)[1].values, (std::vector<double>{2, 3, 5, 6}));
  EXPECT_EQ((*results)[2].shape, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ((*results)[2].values,
            (std::vector<double>{2, 3, 1, 2, 3, 5, 6, 4, 5, 6}));
}

TEST_F(EvaluatorTest, CastRoundsLikeTheGPU) {
  func::FuncOp func = parse(R"mlir(
    func.func @c(%x: tensor<?xf32>) -> tensor<?xf32> {
      %b = tile.cast %x : tensor<?xf32> to tensor<?xbf16>
      %f = tile.cast %b : tensor<?xbf16> to tensor<?xf32>
      return %f : tensor<?xf32>
    })mlir",
                            "c");
  ASSERT_TRUE(func);
  // 1 + 2^-8 is a bf16 tie: rounds to even (1.0); 1 + 3·2^-8 rounds up.
  Buffer x = Buffer::tensor({3}, StorageType::F32,
                            {1.0 + 1.0 / 256, 1.0 + 3.0 / 256, 70000.0});
  auto results = interp::evaluate(func, {x});
  ASSERT_TRUE(static_cast<bool>(results))
      << llvm::toString(results.takeError());
  EXPECT_EQ((*results)[0].values,
            (std::vector<double>{1.0, 1.0 + 4.0 / 256, 70144.0}));

  interp::EvalOptions exact;
  exact.roundStorage = false;
  auto unrounded = interp::evaluate(func, {x}, exact);
  ASSERT_TRUE(static_cast<bool>(unrounded));
  EXPECT_EQ((*unrounded)[0].values, x.values);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

std::string errorOf(llvm::Expected<std::vector<Buffer>> result) {
  if (result)
    return "";
  return llvm::toString(result.takeError());
}

/// Whether `error` is `message` at a place in the input: `FILE:where`
/// followed by `message` (the file's path depends on the checkout).
::testing::AssertionResult isErrorAt(const std::string &error,
                                     const std::string &where,
                                     const std::string &message) {
  std::string suffix = ":" + where + ": error: " + message;
  if (error.size() > suffix.size() &&
      error.compare(error.size() - suffix.size(), suffix.size(), suffix) == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << error << "' is not '<file>" << suffix << "'";
}

TEST_F(EvaluatorTest, ArgumentErrorsSayWhatIsWrong) {
  func::FuncOp func = loadExample("rms_norm");
  ASSERT_TRUE(func);
  Buffer x = Buffer::tensor({2, 3}, StorageType::BF16);
  Buffer w = Buffer::tensor({3}, StorageType::BF16);
  Buffer eps = Buffer::scalar(1e-6);
  // Each at the function or at the argument's place in rms_norm.mlir.
  EXPECT_TRUE(isErrorAt(errorOf(interp::evaluate(func, {x, w, eps})), "5:1",
                        "function @rms_norm takes 4 arguments, got 3"));
  EXPECT_TRUE(
      isErrorAt(errorOf(interp::evaluate(func, {w, w, eps, eps})), "5:21",
                "argument #0 (tensor<?x?xbf16>): expected rank 2, got rank 1"));
  EXPECT_TRUE(isErrorAt(errorOf(interp::evaluate(func, {x, w, w, eps})), "6:21",
                        "argument #2 (f32): expected a scalar"));
  EXPECT_TRUE(isErrorAt(
      errorOf(interp::evaluate(func, {eps, w, eps, eps})), "5:21",
      "argument #0 (tensor<?x?xbf16>): expected a tensor, got a scalar"));
  Buffer shortData = x;
  shortData.values.pop_back();
  EXPECT_TRUE(isErrorAt(
      errorOf(interp::evaluate(func, {shortData, w, eps, eps})), "5:21",
      "argument #0 (tensor<?x?xbf16>): holds 5 values for a shape of 6 "
      "elements"));
  // Mismatched widths of x and w are found where they meet.
  Buffer wrongW = Buffer::tensor({4}, StorageType::BF16);
  std::string error = errorOf(interp::evaluate(func, {x, wrongW, eps, eps}));
  EXPECT_NE(error.find("'tile.broadcast': input dimension 0 has size 4 but the "
                       "'like' operand's dimension 1 has size 3"),
            std::string::npos)
      << error;
}

TEST_F(EvaluatorTest, StaticShapesAreChecked) {
  func::FuncOp func = parse(R"mlir(
    func.func @s(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
      return %x : tensor<?x8xf32>
    })mlir",
                            "s");
  ASSERT_TRUE(func);
  EXPECT_TRUE(isErrorAt(
      errorOf(
          interp::evaluate(func, {Buffer::tensor({2, 7}, StorageType::F32)})),
      "2:18", "argument #0 (tensor<?x8xf32>): dimension 1 must be 8, got 7"));
}

TEST_F(EvaluatorTest, SliceOutOfRangeAtRunTime) {
  func::FuncOp func = parse(R"mlir(
    func.func @s(%x: tensor<?x?xf32>, %o: index) -> tensor<?x?xf32> {
      %c2 = arith.constant 2 : index
      %0 = tile.slice %x [%o, %c2] : tensor<?x?xf32> -> tensor<?x?xf32>
      return %0 : tensor<?x?xf32>
    })mlir",
                            "s");
  ASSERT_TRUE(func);
  std::string error = errorOf(interp::evaluate(
      func, {Buffer::tensor({1, 3}, StorageType::F32), Buffer::scalar(2)}));
  EXPECT_NE(error.find(
                "offset 2 and size 2 are out of bounds for a last dimension of "
                "size 3"),
            std::string::npos)
      << error;
}

TEST_F(EvaluatorTest, UnsupportedOpIsNamed) {
  func::FuncOp func = parse(R"mlir(
    func.func @u(%x: tensor<?xf32>) -> tensor<?xf32> {
      %0 = math.atan %x : tensor<?xf32>
      return %0 : tensor<?xf32>
    })mlir",
                            "u");
  ASSERT_TRUE(func);
  std::string error =
      errorOf(interp::evaluate(func, {Buffer::tensor({2}, StorageType::F32)}));
  EXPECT_NE(error.find("'math.atan': the reference evaluator does not support "
                       "this op"),
            std::string::npos)
      << error;
}

TEST(Inputs, SeededAndPortable) {
  interp::Random a(7), b(7), c(8);
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    EXPECT_NE(x, c.next());
  }
  // splitmix64's published first output for seed 0.
  interp::Random zero(0);
  EXPECT_EQ(zero.next(), 0xe220a8397b1dcdafULL);
}

TEST(Inputs, ParseShape) {
  EXPECT_EQ(*interp::parseShape("7x13"), (std::vector<int64_t>{7, 13}));
  EXPECT_EQ(*interp::parseShape(""), (std::vector<int64_t>{}));
  auto bad = interp::parseShape("7by13");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "'7by13' is not a shape such as 7x13");
}
} // namespace
