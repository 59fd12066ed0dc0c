//===- BlasConstants.h - the cuBLASLt enum values Tile passes -------------===//
//
// From CUDA 13's library_types.h, cublas_api.h and cublasLt.h. Tile does not
// include those headers (the runtime builds without CUDA); BlasTest compares
// these values with them wherever the toolkit is installed.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_RUNTIME_BLASCONSTANTS_H
#define TILE_LIB_RUNTIME_BLASCONSTANTS_H

namespace tile::rt::blas {
constexpr int kCudaR32F = 0, kCudaR16F = 2, kCudaR16BF = 14; // cudaDataType
constexpr int kComputeF32 = 68;      // CUBLAS_COMPUTE_32F: no TF32
constexpr int kOpN = 0, kOpT = 1;    // cublasOperation_t
constexpr int kDescTransA = 3;       // CUBLASLT_MATMUL_DESC_TRANSA
constexpr int kDescTransB = 4;       // CUBLASLT_MATMUL_DESC_TRANSB
constexpr int kPrefMaxWorkspace = 1; // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
constexpr int kPrefAlignmentA = 5;   // ..._PREF_MIN_ALIGNMENT_A_BYTES; B, C, D
                                     // are the next three
constexpr int kStatusNotSupported = 15; // CUBLAS_STATUS_NOT_SUPPORTED
constexpr int kHeuristicResultBytes =
    96; // sizeof(cublasLtMatmulHeuristicResult_t)
} // namespace tile::rt::blas

#endif // TILE_LIB_RUNTIME_BLASCONSTANTS_H
