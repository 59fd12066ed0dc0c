//===- ClosedForms.h - gradients worked out by hand -------------*- C++ -*-===//
//-*-//
//
// The reference the finite differences and the derived backward kernels are
// both held to:
//
//   SwiGLU   da = dc·b·σ(a)·(1 + a·(1 − σ(a))),  db = dc·silu(a)
//   RMSNorm  g = dy·(w + offset), dx = rstd·(g − x̂·mean(x̂·g)),
//            dw = Σ_rows dy·x̂   (a cross-row reduction)
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UNITTESTS_INTERP_CLOSEDFORMS_H
#define TILE_UNITTESTS_INTERP_CLOSEDFORMS_H

#include "KernelFixture.h"

#include <algorithm>

namespace tile::testing {

struct SwiGLUGradient {
  std::vector<double> da, db;
};

inline SwiGLUGradient swigluGradient(const interp::Buffer &a,
                                     const interp::Buffer &b,
                                     const interp::Buffer &dc) {
  SwiGLUGradient grad{std::vector<double>(a.values.size()),
                      std::vector<double>(a.values.size())};
  for (size_t i = 0; i < a.values.size(); ++i) {
    double x = a.values[i], s = sigmoid(x), g = dc.values[i];
    grad.da[i] = g * b.values[i] * s * (1.0 + x * (1.0 - s));
    grad.db[i] = g * x * s;
  }
  return grad;
}

/// x is [rows, 2·width]; its halves are a and b.
inline std::vector<double> siluAndMulGradient(const interp::Buffer &x,
                                              const interp::Buffer &dc,
                                              int64_t rows, int64_t width) {
  std::vector<double> dx(x.values.size(), 0.0);
  int64_t full = x.shape.back();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < width; ++j) {
      double a = x.values[r * full + j];
      double b = x.values[r * full + width + j];
      double g = dc.values[r * width + j], s = sigmoid(a);
      dx[r * full + j] = g * b * s * (1.0 + a * (1.0 - s));
      dx[r * full + width + j] = g * a * s;
    }
  return dx;
}

struct RMSNormGradient {
  std::vector<double> dx, dw;
  /// max rstd·|g|: the size of dx's terms, which cancel at width 1.
  double termScale = 0.0;
};

inline RMSNormGradient rmsNormGradient(const interp::Buffer &x,
                                       const interp::Buffer &w,
                                       const interp::Buffer &dy, double eps,
                                       double offset) {
  int64_t width = x.shape.back();
  int64_t rows = width == 0 ? 0 : x.numElements() / width;
  RMSNormGradient grad{std::vector<double>(x.values.size()),
                       std::vector<double>(width, 0.0), 0.0};
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = &x.values[r * width];
    const double *dyr = &dy.values[r * width];
    double squares = 0;
    for (int64_t j = 0; j < width; ++j)
      squares += xr[j] * xr[j];
    double rstd = 1.0 / std::sqrt(squares / width + eps);
    double dot = 0;
    for (int64_t j = 0; j < width; ++j)
      dot += xr[j] * rstd * dyr[j] * (w.values[j] + offset);
    for (int64_t j = 0; j < width; ++j) {
      double xhat = xr[j] * rstd;
      double g = dyr[j] * (w.values[j] + offset);
      grad.dx[r * width + j] = rstd * (g - xhat * dot / width);
      grad.termScale = std::max(grad.termScale, rstd * std::fabs(g));
      grad.dw[j] += dyr[j] * xhat;
    }
  }
  return grad;
}

/// max |got − want| / max(max |want|, floor): robust where single elements
/// are near 0. `floor` is the scale of the gradient's terms, for gradients
/// that cancel to far below it (RMSNorm at width 1: dx = rstd·(1 − x̂²)·g
/// with x̂² ≈ 1, whose finite difference carries an absolute error relative
/// to rstd·g, not to the tiny result).
inline double normRelativeError(const std::vector<double> &got,
                                const std::vector<double> &want,
                                double floor = 0) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0.0, scale = floor;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    worst = std::max(worst, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return scale == 0.0 ? worst : worst / scale;
}

} // namespace tile::testing

#endif // TILE_UNITTESTS_INTERP_CLOSEDFORMS_H
