//===- RuntimeTest.cpp - the runtime's error paths, without a GPU --------===//
//
// What a caller sees when something is wrong: no driver, the toolkit's stub
// instead of a driver, and every way a tensor can fail to match a kernel.
// Runs everywhere; the GPU paths are exercised on the GPU machine.
//
//===----------------------------------------------------------------------===//

#include "tile/Runtime/Runtime.h"

#include "gtest/gtest.h"

#include <cstring>
#include <fstream>

using namespace tile::rt;

namespace {
bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

TEST(DriverTest, MissingLibraryIsReportedNotFatal) {
  StatusOr<DriverApi> driver = loadDriver("/nonexistent/libcuda.so.1");
  ASSERT_FALSE(driver);
  EXPECT_TRUE(contains(driver.message(), "no CUDA driver: cannot open "
                                         "/nonexistent/libcuda.so.1"))
      << driver.message();
  EXPECT_TRUE(contains(driver.message(), "TILE_LIBCUDA")) << driver.message();
}

TEST(DriverTest, TheToolkitStubIsRecognized) {
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::ifstream(stub))
    GTEST_SKIP() << "no CUDA toolkit stub at " << stub;
  StatusOr<DriverApi> driver = loadDriver(stub);
  ASSERT_FALSE(driver);
  EXPECT_TRUE(contains(driver.message(), "CUDA_ERROR_STUB_LIBRARY"))
      << driver.message();
}

TEST(DriverTest, ErrorCodesHaveNames) {
  EXPECT_EQ(driverErrorName(34), "CUDA_ERROR_STUB_LIBRARY (34)");
  EXPECT_EQ(driverErrorName(700), "CUDA_ERROR_ILLEGAL_ADDRESS (700)");
  EXPECT_EQ(driverErrorName(12345), "CUDA error (12345)");
  EXPECT_TRUE(check(0, "cuInit"));
  Status failed = check(2, "cuMemAlloc");
  EXPECT_FALSE(failed);
  EXPECT_EQ(failed.message(),
            "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
}

TensorView view(std::vector<int64_t> shape, DType dtype = DType::BF16,
                cu::DevicePtr data = 0x10000) {
  TensorView v;
  v.data = data;
  v.shape = std::move(shape);
  v.dtype = dtype;
  return v;
}

TEST(TensorCheckTest, AcceptsWhatMatches) {
  EXPECT_TRUE(checkTensor(view({7, 13}), "x", DType::BF16, {7, 13}));
  EXPECT_TRUE(checkTensor(view({7, 13}), "x", DType::BF16, {-1, 13}));
  // An empty tensor may have no storage.
  EXPECT_TRUE(
      checkTensor(view({0, 13}, DType::BF16, 0), "x", DType::BF16, {-1, 13}));
}

TEST(TensorCheckTest, SaysWhatIsWrong) {
  Status dtype =
      checkTensor(view({7, 13}, DType::F16), "x", DType::BF16, {7, 13});
  EXPECT_EQ(dtype.message(), "x has dtype f16, expected bf16");
  Status rank = checkTensor(view({91}), "x", DType::BF16, {7, 13});
  EXPECT_EQ(rank.message(), "x has shape [91], expected rank 2 [7, 13]");
  Status size = checkTensor(view({7, 12}), "w", DType::BF16, {-1, 13});
  EXPECT_EQ(size.message(), "w has shape [7, 12], expected [?, 13]");
  Status null =
      checkTensor(view({7, 13}, DType::BF16, 0), "dy", DType::BF16, {7, 13});
  EXPECT_EQ(null.message(), "dy is a null pointer");
  Status misaligned =
      checkTensor(view({7, 13}, DType::F32, 0x10002), "x", DType::F32, {7, 13});
  EXPECT_TRUE(contains(misaligned.message(), "x is misaligned"))
      << misaligned.message();
  TensorView strided = view({7, 13});
  strided.strides = {26, 2};
  Status notDense = checkTensor(strided, "x", DType::BF16, {7, 13});
  EXPECT_TRUE(contains(notDense.message(), "x is not contiguous"))
      << notDense.message();
  Status negative = checkTensor(view({-3, 13}), "x", DType::BF16, {-1, 13});
  EXPECT_TRUE(contains(negative.message(), "negative size"))
      << negative.message();
}

TEST(KernelArgsTest, EachArgumentHasItsOwnSlot) {
  KernelArgs args;
  args.pointer(0x1234);
  args.f32(1.5f);
  args.index(-7);
  std::vector<void *> pointers = args.pointers();
  ASSERT_EQ(pointers.size(), 3u);
  EXPECT_EQ(*static_cast<cu::DevicePtr *>(pointers[0]), 0x1234u);
  float f;
  std::memcpy(&f, pointers[1], sizeof(f));
  EXPECT_EQ(f, 1.5f);
  EXPECT_EQ(*static_cast<int64_t *>(pointers[2]), -7);
}
} // namespace

//===----------------------------------------------------------------------===//
// ContextScope, over a driver whose current context is a variable
//===----------------------------------------------------------------------===//

namespace {
cu::Context fakeCurrent = nullptr;
int fakeSwitches = 0;
bool fakeSetFails = false;

DriverApi fakeContextDriver() {
  DriverApi api{};
  api.ctxGetCurrent = [](cu::Context *context) -> cu::Result {
    *context = fakeCurrent;
    return 0;
  };
  api.ctxSetCurrent = [](cu::Context context) -> cu::Result {
    if (fakeSetFails)
      return 201; // CUDA_ERROR_INVALID_CONTEXT
    fakeCurrent = context;
    ++fakeSwitches;
    return 0;
  };
  return api;
}

cu::Context fakeContext(uintptr_t value) {
  return reinterpret_cast<cu::Context>(value);
}
} // namespace

TEST(ContextScopeTest, RestoresTheCallersContext) {
  DriverApi api = fakeContextDriver();
  fakeCurrent = fakeContext(1); // the framework's device
  fakeSwitches = 0;
  fakeSetFails = false;
  {
    ContextScope scope(api, fakeContext(2));
    EXPECT_TRUE(scope.status());
    EXPECT_EQ(fakeCurrent, fakeContext(2));
    {
      ContextScope nested(api, fakeContext(2)); // already current
      EXPECT_TRUE(nested.status());
    }
    EXPECT_EQ(fakeCurrent, fakeContext(2));
  }
  EXPECT_EQ(fakeCurrent, fakeContext(1));
  EXPECT_EQ(fakeSwitches, 2); // in and back; none for the nested scope
}

TEST(ContextScopeTest, NoCurrentContextStaysNone) {
  DriverApi api = fakeContextDriver();
  fakeCurrent = nullptr;
  fakeSetFails = false;
  { ContextScope scope(api, fakeContext(3)); }
  EXPECT_EQ(fakeCurrent, nullptr);
}

TEST(ContextScopeTest, AFailedSwitchIsReportedAndNothingRestored) {
  DriverApi api = fakeContextDriver();
  fakeCurrent = fakeContext(1);
  fakeSwitches = 0;
  fakeSetFails = true;
  {
    ContextScope scope(api, fakeContext(2));
    EXPECT_FALSE(scope.status());
    EXPECT_TRUE(contains(scope.status().message(), "cuCtxSetCurrent"));
  }
  EXPECT_EQ(fakeCurrent, fakeContext(1));
  EXPECT_EQ(fakeSwitches, 0);
  fakeSetFails = false;
}
