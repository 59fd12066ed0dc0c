//===- TiledMLPTest.cpp - the tiled MLP's plans and checks, without a GPU -===//

#include "tile/Ops/TiledMLP.h"
#include "tile/Ops/GroupedMLP.h"

#include "gtest/gtest.h"

using namespace tile;
using namespace tile::ops;
using rt::DType;

namespace {
constexpr size_t kMiB = size_t(1) << 20;

TEST(ShardPlanTest, TheDefaultBudgetSplitsALongSequenceEvenly) {
  // S = 65536, I = 12288, bf16: 72 KiB of g, u, h per row; 1 GiB holds
  // 14108 rows after cuBLASLt's 32 MiB, so five shards of 13120 rows
  // (whole 64-row blocks).
  auto plan = planShards(65536, 12288, DType::BF16, MLPOptions{});
  ASSERT_TRUE(plan) << plan.message();
  EXPECT_EQ(plan->shards, 5);
  EXPECT_EQ(plan->rowsPerShard, 13120);
  EXPECT_EQ(plan->workspaceBytes(),
            size_t(13120) * 3 * 12288 * 2 + rt::Blas::kWorkspaceBytes);
  EXPECT_LE(plan->workspaceBytes(), size_t(1) << 30);
}

TEST(ShardPlanTest, AShortSequenceIsOneShard) {
  auto plan = planShards(2048, 12288, DType::BF16, MLPOptions{});
  ASSERT_TRUE(plan) << plan.message();
  EXPECT_EQ(plan->shards, 1);
  EXPECT_EQ(plan->rowsPerShard, 2048);
}

TEST(ShardPlanTest, AGivenCountNeedNotDivideTheRows) {
  MLPOptions options;
  options.shards = 3;
  auto plan = planShards(1000, 300, DType::F32, options);
  ASSERT_TRUE(plan) << plan.message();
  EXPECT_EQ(plan->shards, 3);
  EXPECT_EQ(plan->rowsPerShard, 334); // 334 + 334 + 332
  options.shards = 8;
  plan = planShards(5, 300, DType::F32, options);
  ASSERT_TRUE(plan) << plan.message();
  EXPECT_EQ(plan->shards, 5) << "clamped to one row per shard";
  EXPECT_EQ(plan->rowsPerShard, 1);
}

TEST(ShardPlanTest, ATightBudgetGivesSmallShards) {
  MLPOptions options;
  options.memoryBudgetBytes = rt::Blas::kWorkspaceBytes + 7 * 3 * 300 * 2;
  auto plan = planShards(100, 300, DType::BF16, options);
  ASSERT_TRUE(plan) << plan.message();
  EXPECT_LE(plan->rowsPerShard, 7);
  EXPECT_EQ(plan->shards, (100 + plan->rowsPerShard - 1) / plan->rowsPerShard);
  EXPECT_LE(plan->workspaceBytes(), options.memoryBudgetBytes);
}

TEST(ShardPlanTest, ImpossiblePlansAreRefused) {
  MLPOptions options;
  options.memoryBudgetBytes = 16 * kMiB;
  auto plan = planShards(100, 300, DType::BF16, options);
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.message().find("cannot hold one row"), std::string::npos)
      << plan.message();
  MLPOptions untiled;
  untiled.recompute = false;
  untiled.shards = 2;
  plan = planShards(100, 300, DType::BF16, untiled);
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.message().find("cannot have 2 shards"), std::string::npos)
      << plan.message();
  MLPOptions negative;
  negative.shards = -1;
  EXPECT_FALSE(planShards(100, 300, DType::BF16, negative));
}

TEST(ShardPlanTest, EachGemmStreamOfAGroupedStepHasItsOwnWorkspace) {
  // Four streams by default, never more than experts: one expert (the
  // dense MLP) has one cuBLASLt workspace, eight experts four.
  auto dense = planShards(2048, 1536, DType::BF16, MLPOptions{});
  auto eight = planShards(2048, 1536, DType::BF16, MLPOptions{}, 8);
  auto two = planShards(2048, 1536, DType::BF16, MLPOptions{}, 2);
  ASSERT_TRUE(dense && eight && two);
  EXPECT_EQ(dense->gemmStreams, 1);
  EXPECT_EQ(eight->gemmStreams, 4);
  EXPECT_EQ(two->gemmStreams, 2);
  EXPECT_EQ(eight->workspaceBytes() - dense->workspaceBytes(),
            3 * rt::Blas::kWorkspaceBytes);
  EXPECT_EQ(eight->shards, dense->shards);
  // The automatic plan's budget counts every stream's workspace.
  MLPOptions tight;
  tight.memoryBudgetBytes = 4 * rt::Blas::kWorkspaceBytes + 64 * kMiB;
  auto budgeted = planShards(65536, 1536, DType::BF16, tight, 8);
  ASSERT_TRUE(budgeted) << budgeted.message();
  EXPECT_LE(budgeted->workspaceBytes(), tight.memoryBudgetBytes);
  MLPOptions none;
  none.streams = 0;
  auto refused = planShards(2048, 1536, DType::BF16, none, 8);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.message().find("at least one stream"), std::string::npos)
      << refused.message();
  EXPECT_FALSE(planShards(2048, 1536, DType::BF16, MLPOptions{}, 0));
}

rt::TensorView tensor(std::vector<int64_t> shape, DType dtype,
                      rt::cu::DevicePtr data = 0x10000) {
  rt::TensorView view;
  view.data = data;
  view.shape = std::move(shape);
  view.dtype = dtype;
  return view;
}

std::string refusal(const MLPWeights &weights, const rt::TensorView &x,
                    const rt::TensorView &dy) {
  auto shape = checkMLPOperands(weights, x, dy, "dy");
  return shape ? "" : shape.message();
}

TEST(MLPCheckTest, ARightCallHasItsSizes) {
  MLPWeights weights{tensor({300, 100}, DType::BF16),
                     tensor({300, 100}, DType::BF16),
                     tensor({100, 300}, DType::BF16)};
  auto shape = checkMLPOperands(weights, tensor({2, 7, 100}, DType::BF16),
                                tensor({2, 7, 100}, DType::BF16), "dy");
  ASSERT_TRUE(shape) << shape.message();
  EXPECT_EQ(shape->rows, 14);
  EXPECT_EQ(shape->hidden, 100);
  EXPECT_EQ(shape->intermediate, 300);
  MLPGradients grads{tensor({300, 100}, DType::F32),
                     tensor({300, 100}, DType::F32),
                     tensor({100, 300}, DType::F32)};
  EXPECT_TRUE(checkMLPGradients(grads, *shape, DType::BF16));
  // Or all three in the weights' dtype (the untiled step's own).
  MLPGradients own{tensor({300, 100}, DType::BF16),
                   tensor({300, 100}, DType::BF16),
                   tensor({100, 300}, DType::BF16)};
  EXPECT_TRUE(checkMLPGradients(own, *shape, DType::BF16));
}

TEST(MLPCheckTest, AWrongCallIsToldWhatIsWrong) {
  MLPWeights weights{tensor({300, 100}, DType::BF16),
                     tensor({300, 100}, DType::BF16),
                     tensor({100, 300}, DType::BF16)};
  rt::TensorView x = tensor({7, 100}, DType::BF16);
  EXPECT_EQ(refusal(weights, x, tensor({7, 100}, DType::F32)),
            "dy has dtype f32, expected bf16");
  EXPECT_EQ(refusal(weights, x, tensor({8, 100}, DType::BF16)),
            "dy has shape [8, 100], expected [7, 100]");
  EXPECT_EQ(refusal(weights, tensor({7, 100}, DType::BF16, 0), x),
            "x is a null pointer");
  MLPWeights wrongDown = weights;
  wrongDown.down = tensor({300, 100}, DType::BF16);
  EXPECT_EQ(refusal(wrongDown, x, x),
            "the down weight has shape [300, 100], expected [100, 300]");
  MLPWeights wrongUp = weights;
  wrongUp.up.dtype = DType::F16;
  EXPECT_EQ(refusal(wrongUp, x, x),
            "the up weight has dtype f16, expected bf16");
  EXPECT_EQ(refusal(weights, tensor({7, 64}, DType::BF16),
                    tensor({7, 64}, DType::BF16)),
            "the gate weight has shape [300, 100], expected [300, 64]");

  MLPShape shape{7, 100, 300};
  MLPGradients grads{tensor({300, 100}, DType::F32),
                     tensor({300, 100}, DType::BF16),
                     tensor({100, 300}, DType::F32)};
  rt::Status refused = checkMLPGradients(grads, shape, DType::BF16);
  EXPECT_EQ(refused.message(),
            "main_grad of the up weight has dtype bf16, expected f32");
  // The gate's dtype decides: bf16 gate, f32 up.
  grads.gate.dtype = DType::BF16;
  grads.up.dtype = DType::F32;
  EXPECT_EQ(checkMLPGradients(grads, shape, DType::BF16).message(),
            "main_grad of the up weight has dtype f32, expected bf16");
  // Neither f32 nor the weights' dtype.
  grads.gate.dtype = DType::F16;
  EXPECT_EQ(checkMLPGradients(grads, shape, DType::BF16).message(),
            "main_grad of the gate weight has dtype f16, expected f32");
  grads.gate.dtype = DType::F32;
  grads.down.shape = {100, 301};
  EXPECT_EQ(checkMLPGradients(grads, shape, DType::BF16).message(),
            "main_grad of the down weight has shape [100, 301], expected "
            "[100, 300]");
}

TEST(MLPCheckTest, AFusedWeightIsSplitInHalves) {
  auto weights = MLPWeights::fused(tensor({600, 100}, DType::BF16),
                                   tensor({100, 300}, DType::BF16));
  ASSERT_TRUE(weights) << weights.message();
  EXPECT_EQ(weights->gate.shape, (std::vector<int64_t>{300, 100}));
  EXPECT_EQ(weights->up.data - weights->gate.data, 300u * 100 * 2);
  auto odd = MLPWeights::fused(tensor({601, 100}, DType::BF16),
                               tensor({100, 300}, DType::BF16));
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.message(),
            "a fused gate/up weight must be [2I, H], got [601, 100]");
  auto grads = MLPGradients::fused(tensor({600}, DType::F32),
                                   tensor({100, 300}, DType::F32));
  ASSERT_FALSE(grads);
  EXPECT_EQ(grads.message(),
            "a fused gate/up main_grad must be [2I, H], got [600]");
}

TEST(GroupedMLPViewTest, StackedWeightsGiveOneViewPerExpert) {
  auto weights = GroupedMLPWeights::fusedStacked(
      tensor({3, 600, 100}, DType::BF16), tensor({3, 100, 300}, DType::BF16));
  ASSERT_TRUE(weights) << weights.message();
  ASSERT_EQ(weights->experts.size(), 3u);
  const MLPWeights &last = weights->experts[2];
  EXPECT_EQ(last.gate.shape, (std::vector<int64_t>{300, 100}));
  EXPECT_EQ(last.gate.data - 0x10000, 2u * 600 * 100 * 2);
  EXPECT_EQ(last.up.data - last.gate.data, 300u * 100 * 2);
  EXPECT_EQ(last.down.data - 0x10000, 2u * 100 * 300 * 2);
  auto grads = GroupedMLPGradients::stacked(tensor({2, 300, 100}, DType::F32),
                                            tensor({2, 300, 100}, DType::F32),
                                            tensor({2, 100, 300}, DType::F32));
  ASSERT_TRUE(grads) << grads.message();
  EXPECT_EQ(grads->experts[1].up.data - 0x10000, 300u * 100 * 4);
}

TEST(GroupedMLPViewTest, MismatchedStacksAreRefused) {
  auto experts = GroupedMLPWeights::stacked(tensor({3, 300, 100}, DType::BF16),
                                            tensor({3, 300, 100}, DType::BF16),
                                            tensor({4, 100, 300}, DType::BF16));
  ASSERT_FALSE(experts);
  EXPECT_EQ(experts.message(),
            "the stacked down weight has 4 experts, not 3 as the others");
  auto flat = GroupedMLPWeights::fusedStacked(tensor({600, 100}, DType::BF16),
                                              tensor({100, 300}, DType::BF16));
  ASSERT_FALSE(flat);
  EXPECT_EQ(flat.message(),
            "the stacked gate/up weight must be [E, rows, cols], got "
            "[600, 100]");
  auto none = GroupedMLPWeights::fusedStacked(
      tensor({0, 600, 100}, DType::BF16), tensor({0, 100, 300}, DType::BF16));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.message(), "a grouped MLP needs at least one expert");
  auto odd = GroupedMLPGradients::fusedStacked(
      tensor({2, 601, 100}, DType::F32), tensor({2, 100, 300}, DType::F32));
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.message(),
            "a fused gate/up main_grad must be [2I, H], got [601, 100]");
}
} // namespace

TEST(ShardPlanTest, TheUntiledWorkspaceIsItsLayoutOfAllTheRows) {
  // A caller that knows only the layout (torch.compile's fake of a
  // symbolic row count) sizes the untiled step's workspace exactly.
  MLPOptions untiled;
  untiled.recompute = false;
  for (int64_t experts : {1, 3, 8}) {
    auto layout = planWorkspace(333, DType::BF16, untiled, experts);
    ASSERT_TRUE(layout) << layout.message();
    EXPECT_EQ(layout->rowBytes, 333u * 2);
    for (int64_t rows : {0, 1, 5, 64, 1001}) {
      auto plan = planShards(rows, 333, DType::BF16, untiled, experts);
      ASSERT_TRUE(plan) << plan.message();
      EXPECT_EQ(plan->shards, 1);
      EXPECT_EQ(plan->workspaceBytes(), layout->bytes(rows)) << rows;
      // Each buffer starts 256-byte aligned (cuBLASLt's requirement).
      EXPECT_EQ(layout->bufferBytes(rows) % 256, 0u);
      EXPECT_GE(layout->bufferBytes(rows), static_cast<size_t>(rows) * 666);
    }
  }
  EXPECT_FALSE(planWorkspace(0, DType::BF16, untiled));
}
