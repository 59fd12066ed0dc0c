//===- DifferentiateTest.cpp - derived backward kernels vs closed forms --===//
//
// The lit tests check the derived IR and compare it with finite differences;
// these hold the derived backward of each example, under every policy, to
// the gradients worked out by hand, to 1e-12 in exact float64.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "../Interp/ClosedForms.h"
#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Interp/Evaluator.h"

#include "mlir/IR/Diagnostics.h"
#include "gtest/gtest.h"

using namespace mlir;
namespace interp = ::tile::interp;
using interp::Buffer;
using ::tile::testing::normRelativeError;

namespace {
class DifferentiateTest : public ::tile::testing::KernelFixture {
protected:
  Buffer random(std::vector<int64_t> shape) {
    return ::tile::testing::randomTensor(std::move(shape), rng, -2.0, 2.0);
  }

  std::vector<Buffer> run(func::FuncOp func, const std::vector<Buffer> &args) {
    interp::EvalOptions exact;
    exact.roundStorage = false;
    auto results = interp::evaluate(func, args, exact);
    EXPECT_TRUE(static_cast<bool>(results))
        << llvm::toString(results.takeError());
    return results ? *results : std::vector<Buffer>();
  }

  mlir::tile::DerivedKernel
  derive(func::FuncOp func,
         const mlir::tile::DifferentiateOptions &options = {}) {
    FailureOr<mlir::tile::DerivedKernel> derived =
        mlir::tile::differentiateKernel(func, options);
    EXPECT_TRUE(succeeded(derived));
    return succeeded(derived) ? *derived : mlir::tile::DerivedKernel{};
  }

  interp::Random rng{2024};
};

const std::vector<std::pair<int64_t, int64_t>> kShapes = {
    {1, 1}, {7, 13}, {13, 1000}, {2, 3000}};

TEST_F(DifferentiateTest, NoOperatorBackwardReadsAForwardResult) {
  // tile::ops binds the operators' backward arguments by position
  // (lib/Ops/Ops.cpp): a forward_result argument among them would shift
  // every later one. None of them needs one today; this says so if that
  // changes.
  for (const char *name : {"swiglu", "geglu", "silu_and_mul", "rms_norm",
                           "rope", "softcap", "cross_entropy"}) {
    SCOPED_TRACE(name);
    func::FuncOp func = loadExample(name);
    ASSERT_TRUE(func);
    for (auto policy : {mlir::tile::RecomputePolicy::Recompute,
                        mlir::tile::RecomputePolicy::SaveRowStats}) {
      mlir::tile::DifferentiateOptions options;
      options.policy = policy;
      mlir::tile::DerivedKernel derived = derive(func, options);
      ASSERT_TRUE(derived.backward);
      for (unsigned i = 0; i < derived.backward.getNumArguments(); ++i)
        EXPECT_FALSE(derived.backward.getArgAttr(
            i, mlir::tile::TileDialect::getForwardResultAttrName()));
      derived.backward.erase();
      if (derived.forwardWithSaved)
        derived.forwardWithSaved.erase();
    }
  }
}

TEST_F(DifferentiateTest, SwiGLU) {
  func::FuncOp func = loadExample("swiglu");
  ASSERT_TRUE(func);
  mlir::tile::DerivedKernel derived = derive(func);
  ASSERT_TRUE(derived.backward);
  EXPECT_FALSE(derived.forwardWithSaved);
  for (auto [rows, width] : kShapes) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(width));
    Buffer a = random({rows, width}), b = random({rows, width});
    Buffer dc = random({rows, width});
    auto want = ::tile::testing::swigluGradient(a, b, dc);
    std::vector<Buffer> got = run(derived.backward, {a, b, dc});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_LE(normRelativeError(got[0].values, want.da), 1e-12);
    EXPECT_LE(normRelativeError(got[1].values, want.db), 1e-12);
  }
}

TEST_F(DifferentiateTest, SiluAndMulFillsBothHalvesAndZeroesAnOddColumn) {
  func::FuncOp func = loadExample("silu_and_mul");
  ASSERT_TRUE(func);
  mlir::tile::DerivedKernel derived = derive(func);
  ASSERT_TRUE(derived.backward);
  for (auto [rows, width] : kShapes) {
    for (int64_t extra : {0, 1}) {
      SCOPED_TRACE(std::to_string(rows) + "x(2*" + std::to_string(width) + "+" +
                   std::to_string(extra) + ")");
      Buffer x = random({rows, 2 * width + extra});
      Buffer dc = random({rows, width});
      std::vector<double> want =
          ::tile::testing::siluAndMulGradient(x, dc, rows, width);
      std::vector<Buffer> got = run(derived.backward, {x, dc});
      ASSERT_EQ(got.size(), 1u);
      EXPECT_LE(normRelativeError(got[0].values, want), 1e-12);
    }
  }
}

TEST_F(DifferentiateTest, RMSNormUnderEveryPolicy) {
  for (auto policy : {mlir::tile::RecomputePolicy::Recompute,
                      mlir::tile::RecomputePolicy::SaveRowStats}) {
    for (bool mainGrad : {false, true}) {
      SCOPED_TRACE(std::string(policy == mlir::tile::RecomputePolicy::Recompute
                                   ? "recompute"
                                   : "save-row-stats") +
                   (mainGrad ? " main-grad" : ""));
      func::FuncOp func = loadExample("rms_norm");
      ASSERT_TRUE(func);
      mlir::tile::DifferentiateOptions options;
      options.policy = policy;
      options.mainGrad = mainGrad;
      mlir::tile::DerivedKernel derived = derive(func, options);
      ASSERT_TRUE(derived.backward);
      ASSERT_EQ(static_cast<bool>(derived.forwardWithSaved),
                policy == mlir::tile::RecomputePolicy::SaveRowStats);
      for (auto [rows, width] : kShapes) {
        for (double offset : {0.0, 1.0}) {
          SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(width));
          double eps = 1e-6;
          Buffer x = random({rows, width}), w = random({width});
          Buffer dy = random({rows, width});
          Buffer acc = random({width});
          std::vector<Buffer> args = {x, w, Buffer::scalar(eps),
                                      Buffer::scalar(offset)};
          auto want = ::tile::testing::rmsNormGradient(x, w, dy, eps, offset);

          std::vector<Buffer> backwardArgs = args;
          backwardArgs.push_back(dy);
          if (derived.forwardWithSaved) {
            std::vector<Buffer> forward = run(derived.forwardWithSaved, args);
            ASSERT_EQ(forward.size(), 2u); // y, rstd
            backwardArgs.push_back(forward[1]);
          }
          if (mainGrad)
            backwardArgs.push_back(acc);
          std::vector<Buffer> got = run(derived.backward, backwardArgs);
          ASSERT_EQ(got.size(), 2u);
          std::vector<double> dw = got[1].values;
          if (mainGrad)
            for (size_t j = 0; j < dw.size(); ++j)
              dw[j] -= acc.values[j];
          EXPECT_LE(normRelativeError(got[0].values, want.dx, want.termScale),
                    1e-12);
          EXPECT_LE(normRelativeError(dw, want.dw), 1e-12);
        }
      }
    }
  }
}

TEST_F(DifferentiateTest, TiedExtremesShareTheCotangentEvenly) {
  // A maximum or minimum reached by k elements gives each g / k, as
  // torch.amax/amin do, over a row and across rows alike (across rows the
  // GPU lowering refuses the count, the evaluator computes it; giving each
  // the whole g made the gradient k times too large).
  const std::vector<double> x = {1, 3, 3, 2,  3,   // row 0
                                 0, 0, 5, -1, -1,  // row 1
                                 4, 4, 4, 4,  4,   // row 2
                                 1, 3, 5, 4,  -1}; // row 3
  const int64_t rows = 4, width = 5;
  for (std::string kind : {"max", "min"}) {
    for (bool acrossRows : {false, true}) {
      SCOPED_TRACE(kind + (acrossRows ? " across rows" : " over a row"));
      std::string dims = acrossRows ? "[0] across_rows" : "[1]";
      func::FuncOp func = parse("func.func @extreme(%x: tensor<?x?xf32>) -> "
                                "tensor<?xf32> attributes {tile.kernel} {\n"
                                "  %m = tile.reduce " +
                                    kind + " %x " + dims +
                                    " : tensor<?x?xf32> -> tensor<?xf32>\n"
                                    "  return %m : tensor<?xf32>\n}\n",
                                "extreme");
      ASSERT_TRUE(func);
      mlir::tile::DerivedKernel derived = derive(func);
      ASSERT_TRUE(derived.backward);
      int64_t groups = acrossRows ? width : rows;
      int64_t members = acrossRows ? rows : width;
      auto at = [&](int64_t group, int64_t member) {
        return acrossRows ? member * width + group : group * width + member;
      };
      Buffer seed = Buffer::tensor({groups}, interp::StorageType::F32);
      for (int64_t g = 0; g < groups; ++g)
        seed.values[g] = 2.0 + g;
      std::vector<double> want(x.size(), 0.0);
      for (int64_t g = 0; g < groups; ++g) {
        double extreme = x[at(g, 0)];
        for (int64_t m = 1; m < members; ++m)
          extreme = kind == "max" ? std::max(extreme, x[at(g, m)])
                                  : std::min(extreme, x[at(g, m)]);
        int64_t ties = 0;
        for (int64_t m = 0; m < members; ++m)
          ties += x[at(g, m)] == extreme;
        for (int64_t m = 0; m < members; ++m)
          if (x[at(g, m)] == extreme)
            want[at(g, m)] = seed.values[g] / static_cast<double>(ties);
      }
      Buffer input = Buffer::tensor({rows, width}, interp::StorageType::F32, x);
      std::vector<Buffer> got = run(derived.backward, {input, seed});
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0].values, want);
    }
  }
}

TEST_F(DifferentiateTest, ATiedAccumulatorSharesTheCotangent) {
  // `into %acc`: the accumulator is one more candidate for the extreme,
  // and shares the cotangent when it ties (row 0: two elements and acc),
  // takes it all when it is the extreme alone (row 1), and none when it
  // is not the extreme (row 2).
  func::FuncOp func =
      parse("func.func @extreme(%x: tensor<?x?xf32>, %acc: tensor<?xf32>) -> "
            "tensor<?xf32> attributes {tile.kernel} {\n"
            "  %m = tile.reduce max %x [1] into %acc : tensor<?x?xf32> -> "
            "tensor<?xf32>\n"
            "  return %m : tensor<?xf32>\n}\n",
            "extreme");
  ASSERT_TRUE(func);
  mlir::tile::DerivedKernel derived = derive(func);
  ASSERT_TRUE(derived.backward);
  Buffer x = Buffer::tensor({3, 3}, interp::StorageType::F32,
                            {3, 1, 3, 0, 1, 2, 5, 5, 4});
  Buffer acc = Buffer::tensor({3}, interp::StorageType::F32, {3, 7, 4});
  Buffer seed = Buffer::tensor({3}, interp::StorageType::F32, {6, 2, 10});
  std::vector<Buffer> got = run(derived.backward, {x, acc, seed});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].values, (std::vector<double>{2, 0, 2, 0, 0, 0, 5, 5, 0}));
  EXPECT_EQ(got[1].values, (std::vector<double>{2, 2, 0}));
}

TEST_F(DifferentiateTest, AnOpWithoutARuleIsNoKernel) {
  // The kernel verifier accepts exactly the ops the differentiator has rules
  // for (one list), so a kernel that verifies can always be differentiated:
  // an op without a rule is refused at parse time, naming it.
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    message = diagnostic.str();
    return success();
  });
  func::FuncOp func = parse(R"mlir(
    func.func @k(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
      %0 = math.atan %x : tensor<?xf32>
      return %0 : tensor<?xf32>
    })mlir",
                            "k");
  EXPECT_FALSE(func);
  EXPECT_NE(message.find("'math.atan' op is not supported in a tile kernel"),
            std::string::npos)
      << message;
}
} // namespace
