//===- Operators.cpp - tile::ops through the C API ------------------------===//

#include "Support.h"

#include "tile/Ops/Ops.h"
#include "tile/Runtime/Blas.h"

using tile::rt::Status;
using tile::rt::StatusOr;
using tile::rt::TensorView;

using tile::capi::toRun;

tile_operators_t::~tile_operators_t() = default;

namespace {

/// Converts the named tensors, then calls `body` with their views.
template <typename Body>
tile_status withViews(
    tile_operators ops,
    std::initializer_list<std::pair<const char *, const tile_tensor *>> tensors,
    Body body) {
  if (!ops)
    return tile::capi::error("a null tile_operators");
  StatusOr<std::vector<TensorView>> views = tile::capi::toViews(tensors);
  if (!views)
    return tile::capi::toC(views.takeStatus());
  return tile::capi::toC(body(*ops->operators, *views));
}

} // namespace

extern "C" {

const char *tile_operator_name(size_t index) {
  return tile::ops::operatorName(index);
}

const char *tile_operator_source(const char *name) {
  return name ? tile::ops::operatorSource(name) : nullptr;
}

tile_status tile_operators_create(int device, const char *cache_dir,
                                  tile_operators *operators) {
  if (!operators)
    return tile::capi::error("tile_operators_create: a null result pointer");
  *operators = nullptr;
  auto created =
      tile::ops::Operators::create(device, cache_dir ? cache_dir : "");
  if (!created)
    return tile::capi::toC(created.takeStatus());
  *operators = new tile_operators_t{std::move(*created)};
  return nullptr;
}

void tile_operators_destroy(tile_operators operators) { delete operators; }

tile_status tile_matmul(tile_operators ops, const tile_run *run,
                        const tile_tensor *a, int trans_a, const tile_tensor *b,
                        int trans_b, const tile_tensor *d, float beta) {
  static_assert(TILE_MATMUL_WORKSPACE_BYTES == tile::rt::Blas::kWorkspaceBytes,
                "the C API's GEMM workspace is cuBLASLt's");
  return withViews(
      ops, {{"a", a}, {"b", b}, {"d", d}},
      [&](tile::ops::Operators &o, std::vector<TensorView> &v) -> Status {
        tile::rt::MatrixView m[3];
        const char *names[3] = {"a", "b", "d"};
        for (int i = 0; i < 3; ++i) {
          if (v[i].shape.size() != 2 || !v[i].isContiguous())
            return Status::error(std::string("matmul: ") + names[i] +
                                 " must be a dense 2-D tensor, got " +
                                 tile::rt::formatShape(v[i].shape) +
                                 (v[i].isContiguous() ? "" : " with strides"));
          m[i] = {v[i].data, v[i].dtype, v[i].shape[0], v[i].shape[1],
                  v[i].shape[1]};
        }
        tile::ops::RunOptions options = toRun(run);
        std::lock_guard<std::mutex> lock(ops->blasMutex);
        if (!ops->blas) {
          auto opened = tile::rt::Blas::open(o.device());
          if (!opened)
            return opened.takeStatus();
          ops->blas = std::move(*opened);
        }
        tile::rt::cu::DevicePtr workspace = options.workspace;
        if (options.callerWorkspace) {
          if (options.workspaceBytes < tile::rt::Blas::kWorkspaceBytes)
            return Status::error(
                "matmul needs a workspace of " +
                std::to_string(tile::rt::Blas::kWorkspaceBytes) + " bytes, " +
                std::to_string(options.workspaceBytes) + " given");
        } else {
          if (!ops->blasWorkspace.size()) {
            auto buffer = tile::rt::DeviceBuffer::allocate(
                o.device(), tile::rt::Blas::kWorkspaceBytes);
            if (!buffer)
              return buffer.takeStatus();
            ops->blasWorkspace = std::move(*buffer);
          }
          workspace = ops->blasWorkspace.data();
        }
        tile::rt::ContextScope scope(o.device());
        if (!scope.status())
          return scope.status();
        // Blas checks the shapes, dtypes and the workspace's alignment.
        return ops->blas->matmul({m[0], trans_a != 0}, {m[1], trans_b != 0},
                                 m[2], beta, workspace, options.stream);
      });
}

} // extern "C"
