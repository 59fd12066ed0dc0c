//===- Project.cu - D[t] = A[t] · B_eᵀ for every expert at once -----------===//
//
// The forward's projections (x·Wᵀ): A token rows, B_e [n, k] row-major
// (K-major, CUTLASS's column-major B), bf16 D with no source.
//
//===----------------------------------------------------------------------===//

#include "Kernels.cuh"

namespace tile::rt::grouped {

using ProjectForm =
    GemmOf<cutlass::layout::RowMajor, cutlass::layout::ColumnMajor, void, Bf16>;

Status launchProject(const Launch &launch) {
  return grouped::launch<ProjectForm>(launch);
}
size_t scratchProject(int groups, int smCount) {
  return scratchBytes<ProjectForm>(groups, smCount);
}

} // namespace tile::rt::grouped
