//===- LaunchPlanTest.cpp - operator argument checks, without a GPU ------===//
//
// The operators bind a call through the manifest before anything reaches a
// GPU: these tests compile the examples with the JIT (no GPU needed) and
// check what a wrong call is told, and what a right call launches.
//
//===----------------------------------------------------------------------===//

#include "tile/Launcher/Launcher.h"
#include "tile/Ops/Ops.h"

#include "llvm/Support/MemoryBuffer.h"
#include "gtest/gtest.h"

using namespace tile;
using namespace tile::ops;

namespace {
std::string example(const std::string &name) {
  auto file = llvm::MemoryBuffer::getFile(std::string(TILE_EXAMPLES_DIR) + "/" +
                                          name + ".mlir");
  return file ? (*file)->getBuffer().str() : std::string();
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

rt::TensorView tensor(std::vector<int64_t> shape,
                      rt::DType dtype = rt::DType::BF16,
                      rt::cu::DevicePtr data = 0x100000) {
  rt::TensorView view;
  view.data = data;
  view.shape = std::move(shape);
  view.dtype = dtype;
  return view;
}

LaunchPlan plan(const std::string &kernel, bool mainGrad = false,
                std::map<unsigned, int64_t> widths = {},
                bool foldFinalize = false) {
  jit::Jit jit("none");
  jit::CompileOptions options;
  options.differentiate = true;
  options.mainGrad = mainGrad;
  options.schedule.foldFinalize = foldFinalize;
  options.widths = std::move(widths);
  auto compiled = jit.compile(example(kernel), options);
  EXPECT_TRUE(compiled) << compiled.message();
  auto parsed = LaunchPlan::parse(compiled ? compiled->manifest : "");
  EXPECT_TRUE(parsed) << parsed.message();
  return parsed ? std::move(*parsed) : LaunchPlan();
}

TEST(LaunchPlanTest, ARightCallBindsSizesAndLaunches) {
  LaunchPlan rms = plan("rms_norm");
  // Leading dimensions flatten into rows: [2, 3, 1000] is 6 rows.
  auto bound = rms.bind(
      "rms_norm_bwd",
      {tensor({2, 3, 1000}), tensor({1000}), 1e-6f, 0.0f, tensor({2, 3, 1000})},
      {tensor({2, 3, 1000}), tensor({1000})});
  ASSERT_TRUE(bound) << bound.message();
  ASSERT_EQ(bound->launches.size(), 2u);
  EXPECT_EQ(bound->launches[0].kernel, "rms_norm_bwd");
  EXPECT_EQ(bound->launches[0].grid, 6u); // min(rows, 264)
  EXPECT_FALSE(bound->launches[0].cooperative);
  EXPECT_EQ(bound->launches[1].kernel, "rms_norm_bwd_finalize");
  EXPECT_EQ(bound->launches[1].grid, 32u); // ceildiv(1000, 32)
  // The finalize waits for the row kernel itself (griddepcontrol.wait),
  // so its launch may overlap the row kernel's end; the row kernel's may
  // not overlap whatever came before the call.
  EXPECT_FALSE(bound->launches[0].overlapsPrevious);
  EXPECT_TRUE(bound->launches[1].overlapsPrevious);
  // x, w, eps, offset, dy, dx, dw, rows, 3 widths, ctas, workspace.
  EXPECT_EQ(bound->args.size(), 13u);
  std::vector<void *> params = bound->args.pointers();
  EXPECT_EQ(*static_cast<int64_t *>(params[7]), 6);    // rows
  EXPECT_EQ(*static_cast<int64_t *>(params[8]), 1000); // width of x
  EXPECT_EQ(bound->workspaceParam, 12u);
  EXPECT_FALSE(bound->arrivalsParam);
  EXPECT_FALSE(rms.countsArrivals());
}

TEST(LaunchPlanTest, AFoldedFinalizeIsOneCooperativeLaunch) {
  LaunchPlan rms = plan("rms_norm", false, {}, /*foldFinalize=*/true);
  // Leading dimensions flatten into rows: [2, 3, 1000] is 6 rows.
  auto bound = rms.bind(
      "rms_norm_bwd",
      {tensor({2, 3, 1000}), tensor({1000}), 1e-6f, 0.0f, tensor({2, 3, 1000})},
      {tensor({2, 3, 1000}), tensor({1000})});
  ASSERT_TRUE(bound) << bound.message();
  ASSERT_EQ(bound->launches.size(), 1u);
  EXPECT_EQ(bound->launches[0].kernel, "rms_norm_bwd");
  EXPECT_EQ(bound->launches[0].grid, 6u); // max(min(rows, 264), 1)
  EXPECT_TRUE(bound->launches[0].cooperative);
  EXPECT_FALSE(bound->launches[0].overlapsPrevious);
  EXPECT_EQ(bound->workspaceBytes, 6u * 1000 * 4);
  // x, w, eps, offset, dy, dx, dw, rows, 3 widths, ctas, workspace,
  // arrivals.
  EXPECT_EQ(bound->args.size(), 14u);
  std::vector<void *> params = bound->args.pointers();
  EXPECT_EQ(*static_cast<int64_t *>(params[7]), 6);    // rows
  EXPECT_EQ(*static_cast<int64_t *>(params[8]), 1000); // width of x
  EXPECT_EQ(*static_cast<int64_t *>(params[11]), 6);   // ctas
  EXPECT_EQ(bound->workspaceParam, 12u);
  EXPECT_EQ(bound->arrivalsParam, std::optional<size_t>(13u));
  EXPECT_TRUE(rms.countsArrivals());

  // No rows: still one CTA, which writes dw (zeros) and has no partials.
  auto empty = rms.bind(
      "rms_norm_bwd",
      {tensor({0, 1000}), tensor({1000}), 1e-6f, 0.0f, tensor({0, 1000})},
      {tensor({0, 1000}), tensor({1000})});
  ASSERT_TRUE(empty) << empty.message();
  EXPECT_EQ(empty->launches[0].grid, 1u);
  EXPECT_EQ(*static_cast<int64_t *>(empty->args.pointers()[11]), 0); // ctas
  EXPECT_EQ(empty->workspaceBytes, 0u);
}

TEST(LaunchPlanTest, ElementwiseKernelsLaunchAnElementGrid) {
  // SwiGLU: a CTA per 128 threads x 8 bf16 of the flattened tensors, so
  // 7 x 333 = 2331 elements take 3 CTAs whatever the rows.
  LaunchPlan swiglu = plan("swiglu");
  auto bound = swiglu.bind("swiglu", {tensor({7, 333}), tensor({7, 333})},
                           {tensor({7, 333})});
  ASSERT_TRUE(bound) << bound.message();
  ASSERT_EQ(bound->launches.size(), 1u);
  EXPECT_EQ(bound->launches[0].grid, 3u);
  EXPECT_EQ(bound->launches[0].block, 128u);
  EXPECT_FALSE(bound->launches[0].overlapsPrevious);
  // 2^31 CTAs or more: refused, not truncated.
  int64_t rows = int64_t(1) << 31;
  auto huge =
      swiglu.bind("swiglu", {tensor({rows, 1024}), tensor({rows, 1024})},
                  {tensor({rows, 1024})});
  ASSERT_FALSE(huge);
  EXPECT_TRUE(contains(huge.message(), "more than the 2^31 - 1 a launch takes"))
      << huge.message();
}

TEST(LaunchPlanTest, AWrongCallIsToldWhatIsWrong) {
  LaunchPlan rms = plan("rms_norm");
  auto call = [&](std::vector<Argument> args,
                  std::vector<rt::TensorView> results) {
    auto bound = rms.bind("rms_norm_bwd", args, results);
    EXPECT_FALSE(bound);
    return bound ? std::string() : bound.message();
  };
  rt::TensorView x = tensor({7, 13}), w = tensor({13}), dy = tensor({7, 13});
  EXPECT_EQ(call({tensor({7, 13}, rt::DType::F16), w, 1e-6f, 0.0f, dy}, {x, w}),
            "rms_norm_bwd argument #0 has dtype f16, expected bf16");
  std::string widths = call({x, tensor({12}), 1e-6f, 0.0f, dy}, {x, w});
  EXPECT_TRUE(contains(widths, "the shapes do not fit together: w1 == w0 is "
                               "12 == 13"))
      << widths;
  std::string rows = call({x, w, 1e-6f, 0.0f, tensor({8, 13})}, {x, w});
  EXPECT_TRUE(contains(rows, "argument #4 has shape [8, 13]: its row count 8 "
                             "should be rows = 7"))
      << rows;
  std::string output = call({x, w, 1e-6f, 0.0f, dy}, {tensor({7, 14}), w});
  EXPECT_TRUE(contains(output, "result #0 has shape [7, 14]")) << output;
  EXPECT_EQ(
      call({x, w, 1e-6f, 0.0f, tensor({7, 13}, rt::DType::BF16, 0)}, {x, w}),
      "rms_norm_bwd argument #4 is a null pointer");
  EXPECT_TRUE(contains(
      call({x, w, 1e-6f, 0.0f, tensor({7, 13}, rt::DType::BF16, 0x100001)},
           {x, w}),
      "argument #4 is misaligned"));
  EXPECT_EQ(call({x, 1.0f, 1e-6f, 0.0f, dy}, {x, w}),
            "rms_norm_bwd argument #1 must be a tensor");
  EXPECT_TRUE(contains(call({x, w, 1e-6f, 0.0f, dy}, {x}), "results"));
  auto unknown = rms.bind("rms_norm_bwdd", {}, {});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.message(), "no compiled function 'rms_norm_bwdd'");
}

TEST(LaunchPlanTest, SiluAndMulOutputIsHalfTheInput) {
  LaunchPlan sam = plan("silu_and_mul");
  EXPECT_TRUE(sam.bind("silu_and_mul", {tensor({7, 26})}, {tensor({7, 13})}));
  auto wrong = sam.bind("silu_and_mul", {tensor({7, 26})}, {tensor({7, 26})});
  ASSERT_FALSE(wrong);
  EXPECT_TRUE(contains(wrong.message(), "its width 26 should be (w0 / 2) = 13"))
      << wrong.message();
  EXPECT_TRUE(checkSiluAndMulInput(tensor({7, 26})));
  EXPECT_EQ(checkSiluAndMulInput(tensor({7, 13})).message(),
            "silu_and_mul needs an even last dimension [..., 2H], got 13");
}

TEST(LaunchPlanTest, KernelsSpecializedForAWidthRefuseOthers) {
  LaunchPlan swiglu = plan("swiglu", false, {{0, 13}, {1, 13}});
  EXPECT_TRUE(swiglu.bind("swiglu", {tensor({7, 13}), tensor({7, 13})},
                          {tensor({7, 13})}));
  auto other = swiglu.bind("swiglu", {tensor({7, 14}), tensor({7, 14})},
                           {tensor({7, 14})});
  ASSERT_FALSE(other);
  EXPECT_TRUE(contains(other.message(), "w0 == 13 is 14 == 13"))
      << other.message();
}

TEST(LaunchPlanTest, MainGradIsAnFp32ArgumentAndTheResult) {
  LaunchPlan rms = plan("rms_norm", /*mainGrad=*/true);
  rt::TensorView x = tensor({7, 13}), w = tensor({13});
  rt::TensorView mg = tensor({13}, rt::DType::F32);
  EXPECT_TRUE(rms.bind("rms_norm_bwd", {x, w, 1e-6f, 0.0f, x, mg}, {x, mg}));
  auto bf16 = rms.bind("rms_norm_bwd", {x, w, 1e-6f, 0.0f, x, w}, {x, w});
  ASSERT_FALSE(bf16);
  EXPECT_EQ(bf16.message(),
            "rms_norm_bwd argument #5 has dtype bf16, expected f32");
}
} // namespace
