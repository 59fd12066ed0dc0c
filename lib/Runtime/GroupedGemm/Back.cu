//===- Back.cu - D[t] = A[t] · B_e (+ D[t]) for every expert at once ------===//
//
// The data gradients (dy·W): A token rows, B_e [k, n] row-major (N-major,
// CUTLASS's row-major B), bf16 D, read only where beta is not 0 (dx =
// dg·gate + du·up of separately stored weights is two calls).
//
//===----------------------------------------------------------------------===//

#include "Kernels.cuh"

namespace tile::rt::grouped {

using BackForm =
    GemmOf<cutlass::layout::RowMajor, cutlass::layout::RowMajor, Bf16, Bf16>;

Status launchBack(const Launch &launch) {
  return grouped::launch<BackForm>(launch);
}
size_t scratchBack(int groups, int smCount) {
  return scratchBytes<BackForm>(groups, smCount);
}

} // namespace tile::rt::grouped
