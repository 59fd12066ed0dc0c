//===- MLPReference.h - the SwiGLU MLP in float64, and its tolerance ------===//
//
// Shared by the tiled MLP's tests (MLPTests.cpp, which defines these and
// explains the tolerance) and the grouped MLP's (GroupedMLPTests.cpp, whose
// reference is this one per expert).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_GPU_TESTS_MLPREFERENCE_H
#define TILE_TOOLS_GPU_TESTS_MLPREFERENCE_H

#include "Suite.h"

namespace tile::gputests {

struct Gradients {
  std::vector<double> dx, gate, up, down;
};

/// a + b, element by element.
Gradients plus(Gradients a, const Gradients &b);

/// The float64 values and, for each, the sum of the magnitudes of the
/// terms it sums (the scale of its rounding error).
struct Reference {
  std::vector<double> y, yTerms;
  Gradients grads, terms;
};

/// The MLP in float64 from the stored (rounded) inputs: x and dy [S, H],
/// gate and up [I, H], down [H, I].
Reference reference(const std::vector<double> &x, const std::vector<double> &wg,
                    const std::vector<double> &wu,
                    const std::vector<double> &wd,
                    const std::vector<double> &dy, int64_t S, int64_t H,
                    int64_t I);

/// |got − want| ≤ tol · (rms(want) + terms) per element, tol by dtype.
void expectClose(Suite &suite, const std::string &name,
                 const std::vector<double> &got,
                 const std::vector<double> &want,
                 const std::vector<double> &terms, DType dtype);

} // namespace tile::gputests

#endif // TILE_TOOLS_GPU_TESTS_MLPREFERENCE_H
