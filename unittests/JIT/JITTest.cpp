//===- JITTest.cpp - the JIT and its cache, without a GPU ----------------===//

#include "tile/JIT/JIT.h"
#include "tile/InitTile.h"
#include "tile/Version/Version.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "tile/Pipelines/Pipelines.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"

#include <fstream>
#include <thread>
#include <vector>

using namespace tile::jit;

namespace {
std::string readExample(const std::string &name) {
  auto file = llvm::MemoryBuffer::getFile(std::string(TILE_EXAMPLES_DIR) + "/" +
                                          name + ".mlir");
  return file ? (*file)->getBuffer().str() : std::string();
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

class JITTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> path;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("tile-jit-test", path));
    dir = std::string(path);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }
  std::string entryFile(const std::string &key) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, key + ".tile");
    return std::string(path);
  }
  std::string dir;
};

TEST_F(JITTest, CompilesForwardAndBackwardToPtxAndManifest) {
  Jit jit(dir);
  CompileOptions options;
  options.differentiate = true;
  auto kernels = jit.compile(readExample("rms_norm"), options);
  ASSERT_TRUE(kernels) << kernels.message();
  EXPECT_TRUE(contains(kernels->ptx, ".target sm_80"));
  EXPECT_TRUE(contains(kernels->ptx, ".visible .entry rms_norm("));
  EXPECT_TRUE(contains(kernels->ptx, ".visible .entry rms_norm_bwd_finalize("));
  EXPECT_FALSE(contains(kernels->ptx, "__nv_"));
  EXPECT_TRUE(contains(kernels->manifest, "\"function\": \"rms_norm_bwd\""));
}

TEST_F(JITTest, SecondCompileIsAMemoryHitAndANewJitADiskHit) {
  std::string source = readExample("swiglu");
  CompileOptions options;
  {
    Jit jit(dir);
    auto first = jit.compile(source, options);
    auto second = jit.compile(source, options);
    ASSERT_TRUE(first && second);
    EXPECT_EQ(first->ptx, second->ptx);
    EXPECT_EQ(jit.stats().compiles, 1u);
    EXPECT_EQ(jit.stats().memoryHits, 1u);
  }
  Jit fresh(dir);
  auto third = fresh.compile(source, options);
  ASSERT_TRUE(third);
  EXPECT_EQ(fresh.stats().compiles, 0u);
  EXPECT_EQ(fresh.stats().diskHits, 1u);
}

TEST_F(JITTest, EveryOptionIsPartOfTheKey) {
  Jit jit(dir);
  std::string source = readExample("swiglu");
  CompileOptions base;
  auto plain = jit.compile(source, base);
  ASSERT_TRUE(plain);
  CompileOptions hopper = base;
  hopper.chip = "sm_90a";
  auto sm90 = jit.compile(source, hopper);
  ASSERT_TRUE(sm90);
  EXPECT_NE(plain->key, sm90->key);
  EXPECT_TRUE(contains(sm90->ptx, ".target sm_90a"));
  CompileOptions half = base;
  half.dtype = "f16";
  auto f16 = jit.compile(source, half);
  ASSERT_TRUE(f16);
  EXPECT_NE(plain->key, f16->key);
  EXPECT_TRUE(contains(f16->manifest, "\"dtype\": \"f16\""));
  EXPECT_FALSE(contains(f16->manifest, "bf16"));
  CompileOptions derived = base;
  derived.differentiate = true;
  auto backward = jit.compile(source, derived);
  ASSERT_TRUE(backward);
  EXPECT_TRUE(contains(backward->ptx, ".entry swiglu_bwd("));
  CompileOptions narrow = base;
  narrow.schedule.threads = 128;
  auto threads = jit.compile(readExample("rms_norm"), narrow);
  ASSERT_TRUE(threads) << threads.message();
  EXPECT_TRUE(contains(threads->manifest, "\"block\": 128"));
  CompileOptions specialized = base;
  specialized.widths = {{0, 4096}, {1, 4096}};
  auto wide = jit.compile(source, specialized);
  ASSERT_TRUE(wide) << wide.message();
  EXPECT_NE(plain->key, wide->key);
  EXPECT_TRUE(contains(wide->manifest, "\"w0 == 4096\""));
  // The width is a constant in the kernel: the width parameter (#4) is read
  // by the general kernel and not by the specialized one.
  EXPECT_TRUE(contains(plain->ptx, "[swiglu_param_4]"));
  EXPECT_FALSE(contains(wide->ptx, "[swiglu_param_4]"));
  auto changedSource = jit.compile(source + "\n// a comment\n", base);
  ASSERT_TRUE(changedSource);
  EXPECT_NE(plain->key, changedSource->key);
  // The device sizes persistent grids: an H100 PCIe's 114 SMs give 228
  // CTAs of 256 threads where the default (132 SMs) gives 264.
  CompileOptions rmsBase = derived;
  auto rms132 = jit.compile(readExample("rms_norm"), rmsBase);
  ASSERT_TRUE(rms132) << rms132.message();
  EXPECT_TRUE(contains(rms132->manifest, "\"min(rows, 264)\""));
  CompileOptions pcie = rmsBase;
  pcie.device.sms = 114;
  auto rms114 = jit.compile(readExample("rms_norm"), pcie);
  ASSERT_TRUE(rms114) << rms114.message();
  EXPECT_NE(rms132->key, rms114->key);
  EXPECT_TRUE(contains(rms114->manifest, "\"min(rows, 228)\""));
  CompileOptions fewRegisters = pcie;
  fewRegisters.device.registersPerSm = 16384;
  auto rmsRegs = jit.compile(readExample("rms_norm"), fewRegisters);
  ASSERT_TRUE(rmsRegs) << rmsRegs.message();
  EXPECT_TRUE(contains(rmsRegs->manifest, "\"min(rows, 114)\""));
  EXPECT_EQ(jit.stats().compiles, 10u);
}

TEST_F(JITTest, CorruptOrTruncatedEntriesAreRebuilt) {
  std::string source = readExample("silu_and_mul");
  CompileOptions options;
  std::string key, ptx;
  {
    Jit jit(dir);
    auto kernels = jit.compile(source, options);
    ASSERT_TRUE(kernels);
    key = kernels->key;
    ptx = kernels->ptx;
  }
  std::string path = entryFile(key);
  auto original = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(static_cast<bool>(original));
  std::string bytes = (*original)->getBuffer().str();
  for (std::string damaged :
       {bytes.substr(0, bytes.size() / 2),                     // truncated
        std::string(bytes).replace(bytes.size() - 10, 1, "#"), // one byte
        std::string("garbage")}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
    Jit jit(dir);
    auto kernels = jit.compile(source, options);
    ASSERT_TRUE(kernels) << kernels.message();
    EXPECT_EQ(kernels->ptx, ptx);
    EXPECT_EQ(jit.stats().corruptEntries, 1u);
    EXPECT_EQ(jit.stats().compiles, 1u);
    // The entry was rewritten whole.
    Jit after(dir);
    ASSERT_TRUE(after.compile(source, options));
    EXPECT_EQ(after.stats().diskHits, 1u);
  }
}

TEST_F(JITTest, ConcurrentCompilesAgree) {
  Jit jit(dir);
  std::vector<std::string> sources = {readExample("swiglu"),
                                      readExample("rms_norm")};
  std::vector<std::string> results(8);
  std::vector<std::string> errors(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      CompileOptions options;
      options.chip = t % 4 < 2 ? "sm_80" : "sm_90a";
      auto kernels = jit.compile(sources[t % 2], options);
      if (kernels)
        results[t] = kernels->ptx;
      else
        errors[t] = kernels.message();
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < 8; ++t) {
    EXPECT_TRUE(errors[t].empty()) << errors[t];
    EXPECT_EQ(results[t], results[t % 4]) << "thread " << t;
  }
  CacheStats stats = jit.stats();
  EXPECT_EQ(stats.compiles + stats.memoryHits + stats.diskHits, 8u);
}

TEST_F(JITTest, ErrorsCarryTheDiagnostics) {
  Jit jit(dir);
  auto malformed = jit.compile("func.func @f( {", CompileOptions());
  ASSERT_FALSE(malformed);
  EXPECT_TRUE(contains(malformed.message(), "parsing the kernel failed"))
      << malformed.message();
  EXPECT_TRUE(contains(malformed.message(), "kernel:1:"))
      << malformed.message();
  CompileOptions derive;
  derive.differentiate = true;
  auto noRule = jit.compile(R"mlir(
    func.func @k(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
      %0 = math.atan %x : tensor<?x?xf32>
      return %0 : tensor<?x?xf32>
    })mlir",
                            derive);
  ASSERT_FALSE(noRule);
  EXPECT_TRUE(contains(noRule.message(),
                       "'math.atan' op is not supported in a tile kernel"))
      << noRule.message();
  // 100,000-deep nesting: refused before MLIR's recursive parser.
  std::string deep = "func.func private @f() -> " + std::string(100000, '(') +
                     "f32" + std::string(100000, ')');
  auto nested = jit.compile(deep, CompileOptions());
  ASSERT_FALSE(nested);
  EXPECT_TRUE(contains(nested.message(), "kernel:1:")) << nested.message();
  EXPECT_TRUE(contains(nested.message(), "nesting deeper than"))
      << nested.message();
  // Only kernels compile: a declaration, or a function without tile.kernel
  // beside one, is named in a located error (issue 50).
  std::string swiglu = readExample("swiglu");
  auto declared = jit.compile(
      swiglu + "func.func private @g(tensor<?x?xf32>) -> tensor<?x?xf32>\n",
      CompileOptions());
  ASSERT_FALSE(declared);
  EXPECT_TRUE(contains(declared.message(),
                       "error: @g is a declaration (no body); the tile JIT "
                       "takes kernels only"))
      << declared.message();
  EXPECT_TRUE(contains(declared.message(), "kernel:")) << declared.message();
  auto plain = jit.compile(swiglu + R"mlir(
    func.func @h(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
      return %x : tensor<?x?xf32>
    })mlir",
                           CompileOptions());
  ASSERT_FALSE(plain);
  EXPECT_TRUE(contains(plain.message(), "error: @h is not a tile.kernel"))
      << plain.message();
  CompileOptions badDtype;
  badDtype.dtype = "f8";
  auto dtype = jit.compile(swiglu, badDtype);
  ASSERT_FALSE(dtype);
  EXPECT_TRUE(contains(dtype.message(), "unknown dtype 'f8'"))
      << dtype.message();
}

TEST_F(JITTest, AModuleBuiltInCppCompilesLikeItsText) {
  mlir::DialectRegistry registry;
  mlir::tile::registerTileDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  auto module =
      mlir::parseSourceString<mlir::ModuleOp>(readExample("swiglu"), &context);
  ASSERT_TRUE(module);
  Jit jit(dir);
  auto fromModule = jit.compile(*module, CompileOptions());
  ASSERT_TRUE(fromModule) << fromModule.message();
  EXPECT_TRUE(contains(fromModule->ptx, ".visible .entry swiglu("));
}

/// Runs `pipeline` (tile-opt's --pass-pipeline spelling) on `source` and
/// returns the PTX of the gpu.binary, or the diagnostics.
std::string runLikeTileOpt(const std::string &source,
                           const std::string &pipeline) {
  mlir::DialectRegistry registry;
  mlir::tile::registerTileDialects(registry);
  mlir::tile::registerGpuTargets(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return mlir::success();
  });
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return "parse error";
  llvm::raw_string_ostream errors(diagnostics);
  mlir::FailureOr<mlir::OpPassManager> passes =
      mlir::parsePassPipeline(pipeline, errors);
  if (failed(passes))
    return "pipeline error: " + diagnostics;
  mlir::PassManager pm(&context);
  static_cast<mlir::OpPassManager &>(pm) = std::move(*passes);
  if (failed(pm.run(*module)))
    return "failed: " + diagnostics;
  auto ptx = mlir::tile::collectPtx(*module);
  if (failed(ptx))
    return "no PTX";
  std::string text;
  for (auto &[name, object] : *ptx)
    text += object;
  return text;
}

TEST_F(JITTest, ItsPipelineAsTileOptSpellsItReproducesTheCompile) {
  // The JIT's dtype, derivation and width specializations are passes: the
  // pipeline it states gives the same PTX (issue 21).
  CompileOptions options;
  options.chip = "sm_90a";
  options.dtype = "f16";
  options.differentiate = true;
  options.policy = "save-row-stats";
  options.mainGrad = true;
  options.widths = {{0, 4096}, {1, 4096}};
  std::string source = readExample("rms_norm");
  Jit jit(dir);
  auto kernels = jit.compile(source, options);
  ASSERT_TRUE(kernels) << kernels.message();
  std::string pipeline = passPipeline(options);
  EXPECT_TRUE(contains(pipeline, "tile-specialize-storage{dtype=f16}"))
      << pipeline;
  EXPECT_TRUE(
      contains(pipeline, "tile-specialize-widths{widths=0:4096,1:4096}"))
      << pipeline;
  // The backward clones the forward's approximable exponentials: they are
  // marked right before the derivation.
  EXPECT_TRUE(contains(pipeline, "tile-approximate-shifted-exponentials,"
                                 "tile-differentiate{"))
      << pipeline;
  EXPECT_EQ(runLikeTileOpt(source, pipeline), kernels->ptx);

  // A compile that fails says so with the pipeline that fails the same way.
  CompileOptions bad = options;
  bad.schedule.threads = 48;
  auto failed = jit.compile(source, bad);
  ASSERT_FALSE(failed);
  std::string spelled =
      "tile-opt kernel --pass-pipeline='" + passPipeline(bad) + "'";
  EXPECT_TRUE(contains(failed.message(), spelled)) << failed.message();
  EXPECT_TRUE(contains(failed.message(), "multiple of 32")) << failed.message();
  std::string again = runLikeTileOpt(source, passPipeline(bad));
  EXPECT_TRUE(contains(again, "failed: ")) << again;
  EXPECT_TRUE(contains(again, "multiple of 32")) << again;
}

TEST(DeviceFacts, EachReachesTileScheduleThroughTheSpelledPipeline) {
  // DeviceFacts.def is the one list: the description, tile-schedule's and
  // tile-lower-to-ptx's options and the JIT's pipeline (its cache key) all
  // come from it. Each fact set apart from its default is spelled in the
  // pipeline, and tile-schedule parses it back (an unknown option fails).
  tile::DeviceDescription device;
  int64_t apart = 7;
#define TILE_DEVICE_FACT(MEMBER, FLAG, DEFAULT, DESCRIPTION)                   \
  device.MEMBER = DEFAULT + (apart++);
#include "tile/Target/DeviceFacts.def"
  CompileOptions options;
  options.device = device;
  std::string pipeline = passPipeline(options);
  int facts = 0;
#define TILE_DEVICE_FACT(MEMBER, FLAG, DEFAULT, DESCRIPTION)                   \
  ++facts;                                                                     \
  EXPECT_TRUE(contains(pipeline, std::string(FLAG) + "=" +                     \
                                     std::to_string(device.MEMBER)))           \
      << pipeline;
#include "tile/Target/DeviceFacts.def"
  EXPECT_EQ(facts, tile::kDeviceFacts);
  mlir::tile::registerTilePasses();
  std::string errors;
  llvm::raw_string_ostream os(errors);
  EXPECT_TRUE(mlir::succeeded(mlir::parsePassPipeline(
      "builtin.module(tile-schedule{" + device.str() + "})", os)))
      << errors;
}

TEST(JITCacheDirectory, EnvironmentChoosesTheDirectory) {
  setenv("TILE_CACHE_DIR", "/tmp/tile-cache-from-env", 1);
  EXPECT_EQ(Jit().cacheDirectory(), "/tmp/tile-cache-from-env");
  unsetenv("TILE_CACHE_DIR");
  EXPECT_EQ(Jit("none").cacheDirectory(), "none");
}
} // namespace

TEST(JITCompilerVersion, NamesTheReleaseTheRevisionAndTheBinary) {
  // No hand-bumped format number: a rebuild (a new revision, or the same
  // dirty tree compiled again) changes the binary's identity, and with it
  // every cache key.
  std::string version = tile::jit::Jit::compilerVersion();
  EXPECT_NE(version.find(std::string("tile-") + tile::version()),
            std::string::npos)
      << version;
  EXPECT_NE(version.find(std::string("git-") + tile::gitRevision()),
            std::string::npos)
      << version;
  EXPECT_NE(version.find(" binary-/"), std::string::npos) << version;
  EXPECT_EQ(version, tile::jit::Jit::compilerVersion());
}
