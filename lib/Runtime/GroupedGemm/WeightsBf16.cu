//===- WeightsBf16.cu - D_e = A_eᵀ · B_e in bf16 for every expert ---------===//
//
// The weight gradients in the weights' own dtype, for a call that replaces
// them from every token row (the untiled step: one shard, nothing added):
// Weights.cu's operands, fp32 accumulation, the bf16 D written by the
// epilogue with no C. Half the bytes of fp32 main_grad, and no cast after.
//
//===----------------------------------------------------------------------===//

#include "Kernels.cuh"

namespace tile::rt::grouped {

using WeightsBf16Form =
    GemmOf<cutlass::layout::ColumnMajor, cutlass::layout::RowMajor, void, Bf16>;

Status launchWeightsBf16(const Launch &launch) {
  return grouped::launch<WeightsBf16Form>(launch);
}
size_t scratchWeightsBf16(int groups, int smCount) {
  return scratchBytes<WeightsBf16Form>(groups, smCount);
}

} // namespace tile::rt::grouped
