//===- BlasTest.cpp - cuBLASLt opened at run time, without a GPU ---------===//
//
// The library loads (or says why not) and resolves every entry point
// without a GPU; the enum values Tile passes match CUDA's headers where the
// toolkit is installed. The products themselves are checked on the GPU
// (tile-gpu-tests' MLP section).
//
//===----------------------------------------------------------------------===//

#include "tile/Runtime/Blas.h"

#include "../../lib/Runtime/BlasConstants.h"

#include "gtest/gtest.h"

#include <fstream>

#if __has_include(<cublasLt.h>)
#include <cublasLt.h>
#define TILE_HAVE_CUBLASLT_HEADER 1
#endif

using namespace tile::rt;

namespace {
bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

TEST(BlasTest, AMissingLibraryIsReportedNotFatal) {
  StatusOr<BlasApi> api = loadBlas("/nonexistent/libcublasLt.so.13");
  ASSERT_FALSE(api);
  EXPECT_TRUE(contains(api.message(), "no cuBLASLt: cannot open "
                                      "/nonexistent/libcublasLt.so.13"))
      << api.message();
  EXPECT_TRUE(contains(api.message(), "TILE_LIBCUBLASLT")) << api.message();
}

TEST(BlasTest, TheToolkitLibraryResolvesEveryEntryPoint) {
  const char *path = "/usr/local/cuda/lib64/libcublasLt.so.13";
  if (!std::ifstream(path))
    GTEST_SKIP() << "no cuBLASLt at " << path;
  StatusOr<BlasApi> api = loadBlas(path);
  ASSERT_TRUE(api) << api.message();
  EXPECT_GE(api->getVersion(), 130000u);
  EXPECT_STREQ(api->getStatusName(blas::kStatusNotSupported),
               "CUBLAS_STATUS_NOT_SUPPORTED");
}

#ifdef TILE_HAVE_CUBLASLT_HEADER
TEST(BlasTest, ConstantsMatchTheHeaders) {
  static_assert(blas::kCudaR32F == CUDA_R_32F);
  static_assert(blas::kCudaR16F == CUDA_R_16F);
  static_assert(blas::kCudaR16BF == CUDA_R_16BF);
  static_assert(blas::kComputeF32 == CUBLAS_COMPUTE_32F);
  static_assert(blas::kOpN == CUBLAS_OP_N && blas::kOpT == CUBLAS_OP_T);
  static_assert(blas::kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA);
  static_assert(blas::kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
  static_assert(blas::kPrefMaxWorkspace ==
                CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
  static_assert(blas::kPrefAlignmentA ==
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES);
  static_assert(blas::kPrefAlignmentA + 1 ==
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES);
  static_assert(blas::kPrefAlignmentA + 2 ==
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES);
  static_assert(blas::kPrefAlignmentA + 3 ==
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);
  static_assert(blas::kStatusNotSupported == CUBLAS_STATUS_NOT_SUPPORTED);
  static_assert(blas::kHeuristicResultBytes ==
                sizeof(cublasLtMatmulHeuristicResult_t));
  SUCCEED();
}
#endif
} // namespace
