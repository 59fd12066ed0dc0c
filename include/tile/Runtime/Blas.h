//===- Blas.h - row-major GEMMs through cuBLASLt ----------------*- C++ -*-===//
//
// The tiled MLP's matrix products. cuBLASLt is opened with dlopen the way the
// driver is (libcublasLt.so.13, or TILE_LIBCUBLASLT), so the runtime still
// builds and links without CUDA; the entry points are declared here and the
// enum values in lib/Runtime/BlasConstants.h, from CUDA 13's cublasLt.h (a
// unit test compares them with the header where the toolkit is installed).
//
// Everything is row-major, as the rest of Tile: matmul computes
//   d = op(a) · op(b) + beta · d
// with fp32 accumulation (CUBLAS_COMPUTE_32F, no TF32), a and b in bf16, f16
// or f32, d in their dtype or in f32 (the main_grad case). beta = 0 never
// reads d, so a NaN-poisoned d is overwritten.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_RUNTIME_BLAS_H
#define TILE_RUNTIME_BLAS_H

#include "tile/Runtime/Runtime.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace tile::rt {

/// A row-major matrix in device memory: `rows` × `cols`, `ld` elements from
/// one row to the next (ld ≥ cols).
struct MatrixView {
  cu::DevicePtr data = 0;
  DType dtype = DType::F32;
  int64_t rows = 0, cols = 0, ld = 0;
};

/// op(m): m itself, or its transpose.
struct Operand {
  MatrixView matrix;
  bool transposed = false;
};

/// The cuBLASLt entry points Tile uses (CUDA 13 signatures; opaque handles
/// as void pointers).
struct BlasApi {
  using Status = int; // cublasStatus_t
  Status (*create)(void **handle);
  Status (*destroy)(void *handle);
  size_t (*getVersion)();
  const char *(*getStatusName)(Status);
  Status (*matmulDescCreate)(void **desc, int computeType, int scaleType);
  Status (*matmulDescDestroy)(void *desc);
  Status (*matmulDescSetAttribute)(void *desc, int attribute, const void *value,
                                   size_t size);
  Status (*matrixLayoutCreate)(void **layout, int type, uint64_t rows,
                               uint64_t cols, int64_t ld);
  Status (*matrixLayoutDestroy)(void *layout);
  Status (*preferenceCreate)(void **preference);
  Status (*preferenceDestroy)(void *preference);
  Status (*preferenceSetAttribute)(void *preference, int attribute,
                                   const void *value, size_t size);
  Status (*algoGetHeuristic)(void *handle, void *desc, void *a, void *b,
                             void *c, void *d, void *preference, int requested,
                             void *results, int *returned);
  Status (*matmul)(void *handle, void *desc, const void *alpha, const void *a,
                   void *aLayout, const void *b, void *bLayout,
                   const void *beta, const void *c, void *cLayout, void *d,
                   void *dLayout, const void *algo, void *workspace,
                   size_t workspaceBytes, cu::Stream stream);
};

/// Opens cuBLASLt at `path` and resolves every entry point; an error says
/// which library or symbol is missing. Needs no GPU.
StatusOr<BlasApi> loadBlas(const char *path);

class Blas {
public:
  /// The workspace every matmul may use; the caller allocates it once.
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  /// Opens cuBLASLt (TILE_LIBCUBLASLT, else libcublasLt.so.13 on the loader
  /// path, else the CUDA toolkit's) and creates a handle on `device`.
  static StatusOr<std::unique_ptr<Blas>> open(const Device &device);
  ~Blas();
  Blas(const Blas &) = delete;
  Blas &operator=(const Blas &) = delete;

  /// d = op(a) · op(b) + beta · d on `stream` (of the handle's device; the
  /// caller orders it with Tile's kernels by passing them the same one).
  /// Shapes, dtypes, leading dimensions and pointers are checked;
  /// `workspace` holds kWorkspaceBytes and is 256-byte aligned (cuBLASLt's
  /// requirement), or is 0. The device's context must be current.
  Status matmul(const Operand &a, const Operand &b, const MatrixView &d,
                float beta, cu::DevicePtr workspace,
                cu::Stream stream = nullptr);

  /// cuBLASLt's version, e.g. 130100.
  size_t version() const { return api.getVersion(); }

private:
  struct Plan;   // descriptors and the algorithm for one problem
  struct Choice; // one heuristic query's algorithm
  /// The most plans kept (a plan is a few descriptors and one heuristic
  /// query, made again when needed).
  static constexpr size_t kMaxPlans = 4096;
  Blas() = default;
  /// The plan for one problem, made on first use; the caller holds `mutex`.
  StatusOr<Plan *> plan(const Operand &a, const Operand &b, const MatrixView &d,
                        cu::DevicePtr workspace);
  /// Asks cuBLASLt's heuristic for `p`'s algorithm (the problem's own).
  Status choose(Plan &p, const Operand &a, const Operand &b,
                const MatrixView &d, cu::DevicePtr workspace);

  BlasApi api{};
  void *handle = nullptr;
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<Plan>> plans;
  /// The algorithm chosen for each quarter octave of sizes (Blas::plan).
  std::map<std::string, std::unique_ptr<Choice>> choices;
};

} // namespace tile::rt

#endif // TILE_RUNTIME_BLAS_H
