//===- Weights.cu - D_e (+)= A_eᵀ · B_e for every expert at once ----------===//
//
// The weight gradients into fp32 main_grad: A and B token rows reduced
// over each expert's rows (CUTLASS's column-major A and row-major B: both
// M/N-major), D fp32 with one beta per group.
//
//===----------------------------------------------------------------------===//

#include "Kernels.cuh"

namespace tile::rt::grouped {

using WeightsForm = GemmOf<cutlass::layout::ColumnMajor,
                           cutlass::layout::RowMajor, float, float>;

Status launchWeights(const Launch &launch) {
  return grouped::launch<WeightsForm>(launch);
}
size_t scratchWeights(int groups, int smCount) {
  return scratchBytes<WeightsForm>(groups, smCount);
}

} // namespace tile::rt::grouped
