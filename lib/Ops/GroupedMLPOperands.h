//===- GroupedMLPOperands.h - checks of a grouped MLP step's operands -----===//
//
// What GroupedMLP.cpp checks before a step touches its workspace, each
// failure a message that says what is wrong (GroupedMLPOperands.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_OPS_GROUPEDMLPOPERANDS_H
#define TILE_LIB_OPS_GROUPEDMLPOPERANDS_H

#include "tile/Ops/GroupedMLP.h"

namespace tile::ops {

/// Checks the routing weights (and their gradient, where the backward
/// writes it): both or neither, [rows] f32.
Status checkRouting(const TensorView &routing, const TensorView *grad,
                    int64_t rows);
/// Checks x, `out` and every expert's weights (one shape for all); returns
/// the step's sizes. x and `out` are checked once, with expert 0.
rt::StatusOr<MLPShape> checkGroupedOperands(const GroupedMLPWeights &weights,
                                            const TensorView &x,
                                            const TensorView &out,
                                            const char *outName);
/// Checks every expert's main_grad against the step's shape: all f32, or
/// all in the weights' `dtype` (checkMLPGradients).
Status checkGroupedGradients(const GroupedMLPGradients &grads, size_t experts,
                             const MLPShape &shape, rt::DType dtype);

} // namespace tile::ops

#endif // TILE_LIB_OPS_GROUPEDMLPOPERANDS_H
