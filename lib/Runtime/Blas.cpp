//===- Blas.cpp - row-major GEMMs through cuBLASLt, opened at run time ---===//
//
// cuBLASLt is column-major. A row-major matrix is the column-major view of
// its transpose, so the row-major d[m,n] = op(a)·op(b) is computed as the
// column-major dᵀ[n,m] = op(b)ᵀ·op(a)ᵀ: b's storage becomes cuBLASLt's A, a's
// its B, and each keeps its own transposition flag.
//
//===----------------------------------------------------------------------===//

#include "tile/Runtime/Blas.h"

#include "BlasConstants.h"

#include "Symbols.h"
#include <cstdlib>

namespace tile::rt {

using namespace blas;

namespace {

/// cublasLtMatmulHeuristicResult_t.
struct HeuristicResult {
  uint64_t algo[8];
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};
static_assert(sizeof(HeuristicResult) == kHeuristicResultBytes,
              "cublasLt.h's layout");

int cudaType(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return kCudaR16BF;
  case DType::F16:
    return kCudaR16F;
  case DType::F32:
  case DType::I32: // integer data is no matrix: checkMatrix refuses it
  case DType::I64:
    return kCudaR32F;
  }
  return kCudaR32F;
}

/// The largest power of two (≤ 256) dividing the address and the row pitch:
/// cuBLASLt's heuristic otherwise assumes 256-byte alignment and may pick a
/// kernel that faults on a shard that starts mid-row-block.
uint32_t alignment(const MatrixView &m) {
  uint64_t pitch = static_cast<uint64_t>(m.ld) * byteSize(m.dtype);
  uint64_t bits = m.data | pitch | 256;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

/// `size` rounded up to a quarter octave (300 -> 320, 5000 -> 5120): the
/// sizes that share a choice of algorithm (Blas::plan).
int64_t quarterOctave(int64_t size) {
  int64_t step = 1;
  while (step * 8 <= size)
    step *= 2;
  return (size + step - 1) / step * step;
}

/// "matmul: <what> failed: <cuBLASLt's name for status>".
Status failedCall(const BlasApi &api, const char *what, int status) {
  return Status::error(std::string("matmul: ") + what +
                       " failed: " + api.getStatusName(status));
}

std::string describe(const MatrixView &m) {
  return formatShape({m.rows, m.cols}) + " " + name(m.dtype) + " (ld " +
         std::to_string(m.ld) + ")";
}

Status checkMatrix(const MatrixView &m, const char *what) {
  std::string name = what;
  if (m.rows <= 0 || m.cols <= 0)
    return Status::error("matmul: " + name + " is empty: " + describe(m));
  if (m.ld < m.cols)
    return Status::error("matmul: " + name + " has ld " + std::to_string(m.ld) +
                         " below its " + std::to_string(m.cols) + " columns");
  if (m.data == 0)
    return Status::error("matmul: " + name + " is a null pointer");
  if (!isFloat(m.dtype))
    return Status::error("matmul: " + name + " is " + rt::name(m.dtype) +
                         " data; matrices are bf16, f16 or f32");
  if (m.data % byteSize(m.dtype) != 0)
    return Status::error("matmul: " + name + " is misaligned for " +
                         rt::name(m.dtype));
  return Status::ok();
}
} // namespace

StatusOr<BlasApi> loadBlas(const char *path) {
  StatusOr<void *> opened = openLibrary(
      path, "cuBLASLt",
      "install the CUDA toolkit's libcublasLt or set TILE_LIBCUBLASLT to its "
      "path");
  if (!opened)
    return opened.takeStatus();
  void *library = *opened;
  BlasApi api{};
  std::string missing;
  resolveSymbol(library, "cublasLtCreate", api.create, missing);
  resolveSymbol(library, "cublasLtDestroy", api.destroy, missing);
  resolveSymbol(library, "cublasLtGetVersion", api.getVersion, missing);
  resolveSymbol(library, "cublasLtGetStatusName", api.getStatusName, missing);
  resolveSymbol(library, "cublasLtMatmulDescCreate", api.matmulDescCreate,
                missing);
  resolveSymbol(library, "cublasLtMatmulDescDestroy", api.matmulDescDestroy,
                missing);
  resolveSymbol(library, "cublasLtMatmulDescSetAttribute",
                api.matmulDescSetAttribute, missing);
  resolveSymbol(library, "cublasLtMatrixLayoutCreate", api.matrixLayoutCreate,
                missing);
  resolveSymbol(library, "cublasLtMatrixLayoutDestroy", api.matrixLayoutDestroy,
                missing);
  resolveSymbol(library, "cublasLtMatmulPreferenceCreate", api.preferenceCreate,
                missing);
  resolveSymbol(library, "cublasLtMatmulPreferenceDestroy",
                api.preferenceDestroy, missing);
  resolveSymbol(library, "cublasLtMatmulPreferenceSetAttribute",
                api.preferenceSetAttribute, missing);
  resolveSymbol(library, "cublasLtMatmulAlgoGetHeuristic", api.algoGetHeuristic,
                missing);
  resolveSymbol(library, "cublasLtMatmul", api.matmul, missing);
  if (!missing.empty())
    return Status::error(std::string("the cuBLASLt at ") + path + " lacks " +
                         missing + "; it is older than CUDA 12");
  return api;
}

struct Blas::Plan {
  const BlasApi *api = nullptr;
  void *desc = nullptr, *aLayout = nullptr, *bLayout = nullptr,
       *dLayout = nullptr;
  HeuristicResult choice{};
  /// Whether `choice` was made for another problem of its quarter octave
  /// (Blas::plan); if cuBLASLt refuses it here, the plan asks again.
  bool borrowed = false;
  ~Plan() {
    if (desc)
      api->matmulDescDestroy(desc);
    for (void *layout : {aLayout, bLayout, dLayout})
      if (layout)
        api->matrixLayoutDestroy(layout);
  }
};

struct Blas::Choice {
  HeuristicResult result;
};

StatusOr<std::unique_ptr<Blas>> Blas::open(const Device &device) {
  // cublasLtCreate binds the handle to the current device.
  ContextScope scope(device);
  if (!scope.status())
    return scope.status();
  std::string path;
  StatusOr<BlasApi> api = Status::error("");
  if (const char *env = std::getenv("TILE_LIBCUBLASLT"); env && *env) {
    api = loadBlas(env);
  } else {
    api = loadBlas("libcublasLt.so.13");
    if (!api) {
      StatusOr<BlasApi> toolkit =
          loadBlas("/usr/local/cuda/lib64/libcublasLt.so.13");
      if (toolkit)
        api = std::move(toolkit);
    }
  }
  if (!api)
    return api.takeStatus();
  std::unique_ptr<Blas> blas(new Blas());
  blas->api = *api;
  if (int status = blas->api.create(&blas->handle); status != 0)
    return Status::error(std::string("cublasLtCreate failed: ") +
                         blas->api.getStatusName(status));
  return blas;
}

Blas::~Blas() {
  plans.clear();
  choices.clear();
  if (handle)
    api.destroy(handle);
}

StatusOr<Blas::Plan *> Blas::plan(const Operand &a, const Operand &b,
                                  const MatrixView &d,
                                  cu::DevicePtr workspace) {
  const MatrixView &am = a.matrix, &bm = b.matrix;
  int64_t m = d.rows, n = d.cols;
  int64_t k = a.transposed ? am.rows : am.cols;
  std::string layouts;
  for (const MatrixView *x : {&am, &bm, &d})
    layouts += std::string("/") + name(x->dtype) + ":" + std::to_string(x->ld) +
               "@" + std::to_string(alignment(*x));
  layouts += a.transposed ? "/T" : "/N";
  layouts += b.transposed ? "T" : "N";
  layouts += workspace ? "/workspace" : "";
  auto sizes = [](int64_t m, int64_t n, int64_t k) {
    return std::to_string(m) + "," + std::to_string(n) + "," +
           std::to_string(k);
  };
  std::string key = sizes(m, n, k) + layouts;
  if (auto it = plans.find(key); it != plans.end())
    return it->second.get();
  // A mixture of experts meets new row counts every step: the plans are a
  // cache, not a record, and start over rather than grow without bound.
  if (plans.size() >= kMaxPlans) {
    plans.clear();
    choices.clear();
  }
  // The heuristic query costs 50-150 us of host time, which a grouped step
  // paid for each of its GEMMs when the router's row counts were new
  // (docs/Performance.md). Problems whose sizes round up to the same
  // quarter octave, with the same layouts, share one query's algorithm.
  std::string choiceKey =
      sizes(quarterOctave(m), quarterOctave(n), quarterOctave(k)) + layouts;

  auto made = std::make_unique<Plan>();
  Plan &p = *made;
  p.api = &api;
  // Column-major dᵀ[n,m] = op(b)ᵀ[n,k] · op(a)ᵀ[k,m] (see the file comment).
  if (int s = api.matmulDescCreate(&p.desc, kComputeF32, kCudaR32F))
    return failedCall(api, "cublasLtMatmulDescCreate", s);
  int transA = b.transposed ? kOpT : kOpN, transB = a.transposed ? kOpT : kOpN;
  if (int s = api.matmulDescSetAttribute(p.desc, kDescTransA, &transA,
                                         sizeof(transA)))
    return failedCall(api, "setting TRANSA", s);
  if (int s = api.matmulDescSetAttribute(p.desc, kDescTransB, &transB,
                                         sizeof(transB)))
    return failedCall(api, "setting TRANSB", s);
  if (int s = api.matrixLayoutCreate(&p.aLayout, cudaType(bm.dtype), bm.cols,
                                     bm.rows, bm.ld))
    return failedCall(api, "cublasLtMatrixLayoutCreate", s);
  if (int s = api.matrixLayoutCreate(&p.bLayout, cudaType(am.dtype), am.cols,
                                     am.rows, am.ld))
    return failedCall(api, "cublasLtMatrixLayoutCreate", s);
  if (int s = api.matrixLayoutCreate(&p.dLayout, cudaType(d.dtype), d.cols,
                                     d.rows, d.ld))
    return failedCall(api, "cublasLtMatrixLayoutCreate", s);

  if (auto it = choices.find(choiceKey); it != choices.end()) {
    p.choice = it->second->result;
    p.borrowed = true;
  } else if (Status s = choose(p, a, b, d, workspace); !s) {
    return s;
  } else {
    choices[choiceKey] = std::make_unique<Choice>(Choice{p.choice});
  }
  Plan *result = made.get();
  plans[key] = std::move(made);
  return result;
}

Status Blas::choose(Plan &p, const Operand &a, const Operand &b,
                    const MatrixView &d, cu::DevicePtr workspace) {
  const MatrixView &am = a.matrix, &bm = b.matrix;
  void *preference = nullptr;
  if (int s = api.preferenceCreate(&preference))
    return failedCall(api, "cublasLtMatmulPreferenceCreate", s);
  uint64_t maxWorkspace = workspace ? kWorkspaceBytes : 0;
  uint32_t aligned[4] = {alignment(bm), alignment(am), alignment(d),
                         alignment(d)};
  int status = api.preferenceSetAttribute(preference, kPrefMaxWorkspace,
                                          &maxWorkspace, sizeof(maxWorkspace));
  for (int i = 0; i < 4 && status == 0; ++i)
    status = api.preferenceSetAttribute(preference, kPrefAlignmentA + i,
                                        &aligned[i], sizeof(uint32_t));
  int found = 0;
  if (status == 0)
    status =
        api.algoGetHeuristic(handle, p.desc, p.aLayout, p.bLayout, p.dLayout,
                             p.dLayout, preference, 1, &p.choice, &found);
  api.preferenceDestroy(preference);
  p.borrowed = false;
  if (status == kStatusNotSupported || (status == 0 && found == 0))
    return Status::error("matmul: cuBLASLt has no algorithm for op(a) " +
                         describe(am) + (a.transposed ? "ᵀ" : "") +
                         " · op(b) " + describe(bm) +
                         (b.transposed ? "ᵀ" : "") + " into " + describe(d));
  if (status != 0)
    return failedCall(api, "cublasLtMatmulAlgoGetHeuristic", status);
  return Status::ok();
}

Status Blas::matmul(const Operand &a, const Operand &b, const MatrixView &d,
                    float beta, cu::DevicePtr workspace, cu::Stream stream) {
  if (Status s = checkMatrix(a.matrix, "a"); !s)
    return s;
  if (Status s = checkMatrix(b.matrix, "b"); !s)
    return s;
  if (Status s = checkMatrix(d, "d"); !s)
    return s;
  const MatrixView &am = a.matrix, &bm = b.matrix;
  int64_t m = a.transposed ? am.cols : am.rows;
  int64_t k = a.transposed ? am.rows : am.cols;
  int64_t kb = b.transposed ? bm.cols : bm.rows;
  int64_t n = b.transposed ? bm.rows : bm.cols;
  if (k != kb || d.rows != m || d.cols != n)
    return Status::error(
        "matmul: op(a) is " + formatShape({m, k}) + ", op(b) is " +
        formatShape({kb, n}) + " and d is " + formatShape({d.rows, d.cols}) +
        "; expected op(a) [m, k] · op(b) [k, n] into d [m, n]");
  if (am.dtype != bm.dtype)
    return Status::error(std::string("matmul: a is ") + name(am.dtype) +
                         " but b is " + name(bm.dtype));
  if (d.dtype != am.dtype && d.dtype != DType::F32)
    return Status::error(std::string("matmul: d must be ") + name(am.dtype) +
                         " or f32, not " + name(d.dtype));
  if (workspace % 256 != 0)
    return Status::error("matmul: the workspace at " +
                         std::to_string(workspace) +
                         " is not 256-byte aligned, as cuBLASLt requires");
  // Held until the GEMM is queued: no other call can drop the plan in use.
  std::lock_guard<std::mutex> lock(mutex);
  StatusOr<Plan *> chosen = plan(a, b, d, workspace);
  if (!chosen)
    return chosen.takeStatus();
  Plan &p = **chosen;
  float alpha = 1.0f;
  size_t workspaceBytes = workspace ? kWorkspaceBytes : 0;
  const void *bPtr = reinterpret_cast<const void *>(bm.data);
  const void *aPtr = reinterpret_cast<const void *>(am.data);
  void *dPtr = reinterpret_cast<void *>(d.data);
  auto run = [&] {
    return api.matmul(handle, p.desc, &alpha, bPtr, p.aLayout, aPtr, p.bLayout,
                      &beta, dPtr, p.dLayout, dPtr, p.dLayout, p.choice.algo,
                      reinterpret_cast<void *>(workspace), workspaceBytes,
                      stream);
  };
  int status = run();
  // cuBLASLt checks the algorithm against the problem before it queues
  // anything: one chosen for another size it refuses is chosen again.
  if (status != 0 && p.borrowed) {
    if (Status s = choose(p, a, b, d, workspace); !s)
      return s;
    status = run();
  }
  if (status != 0)
    return Status::error(std::string("cublasLtMatmul failed: ") +
                         api.getStatusName(status) + " (" + describe(d) +
                         " output)");
  return Status::ok();
}

} // namespace tile::rt
