//===- ManifestReaderTest.cpp - the launcher alone, as its users link it --===//
//
// Linked against Tile::Launcher and Tile::Runtime only (no MLIR, no LLVM: a
// dependency on either would not link). swiglu.manifest.json is what the
// compiler writes for examples/swiglu.mlir with its backward
// (test/Target/launcher-fixture.mlir keeps it so); the reader takes it, and
// refuses every way a manifest can disagree with the launcher.
//
//===----------------------------------------------------------------------===//

#include "tile/Launcher/Launcher.h"
#include "tile/Target/ManifestFormat.h"

#include "gtest/gtest.h"

#include <fstream>
#include <sstream>

using namespace tile;
using namespace tile::ops;

namespace {
std::string fixture() {
  std::ifstream file(std::string(TILE_LAUNCHER_FIXTURES) +
                     "/swiglu.manifest.json");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// The fixture with `from` replaced by `to` (once; it must occur).
std::string edited(const std::string &from, const std::string &to) {
  std::string text = fixture();
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

std::string errorOf(const std::string &manifest) {
  auto plan = LaunchPlan::parse(manifest);
  EXPECT_FALSE(plan) << "accepted a manifest it should refuse";
  return plan ? std::string() : plan.message();
}

rt::TensorView tensor(std::vector<int64_t> shape) {
  rt::TensorView view;
  view.data = 0x100000;
  view.shape = std::move(shape);
  view.dtype = rt::DType::BF16;
  return view;
}

TEST(ManifestReaderTest, TheCompilersManifestBindsACall) {
  auto plan = LaunchPlan::parse(fixture());
  ASSERT_TRUE(plan) << plan.message();
  auto bound = plan->bind("swiglu", {tensor({4, 64}), tensor({4, 64})},
                          {tensor({4, 64})});
  ASSERT_TRUE(bound) << bound.message();
  ASSERT_EQ(bound->launches.size(), 1u);
  EXPECT_EQ(bound->launches[0].block, 128u);
  EXPECT_EQ(bound->launches[0].grid, 1u); // ceildiv(4 * 64, 1024)
  auto backward = plan->bind(
      "swiglu_bwd", {tensor({4, 64}), tensor({4, 64}), tensor({4, 64})},
      {tensor({4, 64}), tensor({4, 64})});
  ASSERT_TRUE(backward) << backward.message();
  auto wrong = plan->bind("swiglu", {tensor({4, 64}), tensor({4, 32})},
                          {tensor({4, 64})});
  ASSERT_FALSE(wrong);
  EXPECT_TRUE(contains(wrong.message(), "w0 == w1")) << wrong.message();
}

TEST(ManifestReaderTest, AnotherFormatVersionIsRefused) {
  std::string version =
      "\"format_version\": " + std::to_string(kManifestFormatVersion);
  EXPECT_TRUE(contains(errorOf(edited(version, "\"format_version\": 99")),
                       "format_version 99, but this launcher reads version"));
  EXPECT_TRUE(
      contains(errorOf(edited(version + ",", "")), "no format_version"));
}

TEST(ManifestReaderTest, UnknownFieldsAndKindsAreErrorsNotGuesses) {
  EXPECT_TRUE(contains(errorOf(edited("\"block\": 128,", "")),
                       "functions[0].kernels[0]: 'block' must be an integer"));
  EXPECT_TRUE(contains(errorOf(edited("\"block\": 128", "\"block\": 100")),
                       "block 100 is not a multiple of 32"));
  EXPECT_TRUE(contains(errorOf(edited("\"of\": \"rows\"", "\"of\": \"lanes\"")),
                       "unknown parameter 'lanes'"));
  EXPECT_TRUE(
      contains(errorOf(edited("\"kind\": \"buffer\"", "\"kind\": \"tensor\"")),
               "functions[0].params[0]: unknown kind 'tensor'"));
  EXPECT_TRUE(contains(errorOf(edited("\"name\": \"swiglu\"",
                                      "\"name\": \"swiglu\", \"cluster\": 2")),
                       "functions[0].kernels[0]: unknown field 'cluster'"));
  EXPECT_TRUE(contains(
      errorOf(edited("\"calling_convention\"", "\"colling_convention\"")),
      "unknown field 'colling_convention'"));
  EXPECT_TRUE(contains(errorOf(edited("\"index\": 0", "\"index\": \"0\"")),
                       "'index' must be an integer"));
}

TEST(ManifestReaderTest, MalformedExpressionsAreRefusedWithTheManifest) {
  // Parsed once, when the manifest is read, not found at a launch.
  EXPECT_TRUE(contains(errorOf(edited("\"ceildiv(rows * w0, 1024)\"",
                                      "\"cielDiv(rows * w0, 1024)\"")),
                       "functions[0]: 'ctas': unknown function 'cielDiv'"));
  EXPECT_TRUE(contains(errorOf(edited("\"grid\": \"ceildiv(rows * w0, 1024)\"",
                                      "\"grid\": \"ceildiv(rows * w0)\"")),
                       "functions[0].kernels[0]: 'grid': expected ','"));
  EXPECT_TRUE(contains(errorOf(edited("\"w0 == w1\"", "\"w0 = w1\"")),
                       "'w0 = w1' is not a == b or a <= b"));
  EXPECT_TRUE(contains(errorOf(edited("\"w0 == w1\"", "\"w0 == (w1\"")),
                       "missing ')'"));
  EXPECT_TRUE(contains(errorOf(edited("\"workspace_f32_elements\": \"0\"",
                                      "\"workspace_f32_elements\": \"0 +\"")),
                       "'workspace_f32_elements': expected a value"));
}

TEST(ManifestReaderTest, NotJsonSaysWhere) {
  std::string message = errorOf("{\"format_version\": 1, \"functions\": [}");
  EXPECT_TRUE(contains(message, "kernel manifest: not JSON")) << message;
  EXPECT_TRUE(contains(message, "column")) << message;
  EXPECT_TRUE(contains(errorOf("[]"), "not a JSON object"));
}
} // namespace
