//===- tile-gpu-tests.cpp - every operator on the GPU vs float64 ---------===//
//
// The on-GPU suite: every operator, forward and backward, at bf16, f16 and
// f32, rows {1, 7, 13, 4096} x widths {1, 13, 100, 333, 1000, 1500, 3000,
// 4096, 11008}, compared with a float64 reference computed on the host
// from the same rounded inputs; outputs poisoned with NaN before each run;
// dW bitwise identical across runs; main_grad accumulation gives g1 + g2.
// Ends with "N passed, N failed"; exit status 1 if anything failed.
//
//   tile-gpu-tests [--quick | --small] [--rows-per-cta=N]
//     --quick: rows {1, 7, 13} only
//     --small: one small case per operator and dtype (for compute-sanitizer)
//
//===----------------------------------------------------------------------===//

#include "tile/Ops/Ops.h"
#include "tile/Runtime/HostFloat.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace tile;
using rt::DType;
using rt::fromBF16;
using rt::fromF16;
using rt::toBF16;
using rt::toF16;

namespace {
/// A device tensor with its host values (as stored, converted to double).
struct Tensor {
  rt::DeviceBuffer buffer;
  rt::TensorView view;
  std::vector<double> host;
};

struct Suite {
  ops::Operators &ops;
  std::mt19937 rng{7};
  int passed = 0, failed = 0;

  Tensor make(std::vector<int64_t> shape, DType dtype, bool random,
              double low = -2.0, double high = 2.0) {
    Tensor t;
    size_t count = 1;
    for (int64_t size : shape)
      count *= static_cast<size_t>(size);
    auto buffer = rt::DeviceBuffer::allocate(
        ops.device(), std::max<size_t>(count, 1) * rt::byteSize(dtype));
    if (!buffer) {
      std::fprintf(stderr, "error: %s\n", buffer.message().c_str());
      std::exit(1);
    }
    t.buffer = std::move(*buffer);
    t.view.data = t.buffer.data();
    t.view.shape = shape;
    t.view.dtype = dtype;
    t.host.assign(count, 0.0);
    if (!random) {
      (void)t.buffer.fill(0xFF); // NaN in every float format
      return t;
    }
    std::uniform_real_distribution<double> uniform(low, high);
    std::vector<unsigned char> bytes(count * rt::byteSize(dtype));
    for (size_t i = 0; i < count; ++i) {
      float value = static_cast<float>(uniform(rng));
      if (dtype == DType::BF16) {
        uint16_t b = toBF16(value);
        std::memcpy(&bytes[2 * i], &b, 2);
        t.host[i] = fromBF16(b);
      } else if (dtype == DType::F16) {
        uint16_t h = toF16(value);
        std::memcpy(&bytes[2 * i], &h, 2);
        t.host[i] = fromF16(h);
      } else {
        std::memcpy(&bytes[4 * i], &value, 4);
        t.host[i] = value;
      }
    }
    (void)t.buffer.copyFromHost(bytes.data(), bytes.size());
    return t;
  }

  std::vector<double> read(const Tensor &t) {
    size_t count = t.host.size();
    std::vector<unsigned char> bytes(count * rt::byteSize(t.view.dtype));
    (void)t.buffer.copyToHost(bytes.data(), bytes.size());
    std::vector<double> values(count);
    for (size_t i = 0; i < count; ++i) {
      if (t.view.dtype == DType::F32) {
        float f;
        std::memcpy(&f, &bytes[4 * i], 4);
        values[i] = f;
      } else {
        uint16_t h;
        std::memcpy(&h, &bytes[2 * i], 2);
        values[i] = t.view.dtype == DType::BF16 ? fromBF16(h) : fromF16(h);
      }
    }
    return values;
  }

  /// |got − want| ≤ atol·scale + rtol·|want| per element, where `scale`
  /// (default 1) is the size of the terms of a cancelling sum (dW).
  void expect(const std::string &name, const std::vector<double> &got,
              const std::vector<double> &want, DType dtype,
              const std::vector<double> *scale = nullptr) {
    double rtol = dtype == DType::F32 ? 1e-5 : 1e-2;
    double atol = dtype == DType::F32   ? 1e-5
                  : dtype == DType::F16 ? 1e-2
                                        : 2e-2;
    size_t bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
      double allowed = atol * (scale ? std::max(1.0, (*scale)[i]) : 1.0) +
                       rtol * std::fabs(want[i]);
      double error = std::fabs(got[i] - want[i]);
      if (!(error <= allowed))
        ++bad;
      worst = std::max(worst, error / allowed);
    }
    report(name, bad == 0,
           std::to_string(bad) + " of " + std::to_string(want.size()) +
               " elements outside tolerance (worst at " +
               std::to_string(worst) + " of the allowed error)");
  }

  void report(const std::string &name, bool ok, const std::string &detail) {
    if (ok) {
      ++passed;
      return;
    }
    ++failed;
    std::printf("FAIL %s: %s\n", name.c_str(), detail.c_str());
  }

  void check(const std::string &name, const rt::Status &status) {
    if (!status)
      report(name, false, status.message());
  }

  void run(DType dtype, int64_t M, int64_t N) {
    std::string at = std::string(rt::name(dtype)) + " " + std::to_string(M) +
                     "x" + std::to_string(N);
    size_t count = static_cast<size_t>(M * N);
    // SwiGLU.
    Tensor a = make({M, N}, dtype, true), b = make({M, N}, dtype, true);
    Tensor dc = make({M, N}, dtype, true);
    Tensor c = make({M, N}, dtype, false), da = make({M, N}, dtype, false),
           db = make({M, N}, dtype, false);
    check("swiglu fwd " + at, ops.swigluForward(a.view, b.view, c.view));
    check("swiglu bwd " + at,
          ops.swigluBackward(a.view, b.view, dc.view, da.view, db.view));
    check("sync " + at, rt::synchronize(ops.device()));
    std::vector<double> wc(count), wda(count), wdb(count);
    for (size_t i = 0; i < count; ++i) {
      double x = a.host[i], s = 1.0 / (1.0 + std::exp(-x));
      wc[i] = x * s * b.host[i];
      wda[i] = dc.host[i] * b.host[i] * s * (1.0 + x * (1.0 - s));
      wdb[i] = dc.host[i] * x * s;
    }
    expect("swiglu fwd " + at, read(c), wc, dtype);
    expect("swiglu bwd da " + at, read(da), wda, dtype);
    expect("swiglu bwd db " + at, read(db), wdb, dtype);

    // silu_and_mul on [M, 2N].
    Tensor x2 = make({M, 2 * N}, dtype, true), out = make({M, N}, dtype, false);
    Tensor dx2 = make({M, 2 * N}, dtype, false);
    check("silu_and_mul fwd " + at, ops.siluAndMulForward(x2.view, out.view));
    check("silu_and_mul bwd " + at,
          ops.siluAndMulBackward(x2.view, dc.view, dx2.view));
    check("sync " + at, rt::synchronize(ops.device()));
    std::vector<double> wout(count), wdx2(2 * count);
    for (int64_t r = 0; r < M; ++r)
      for (int64_t j = 0; j < N; ++j) {
        double g = x2.host[r * 2 * N + j], u = x2.host[r * 2 * N + N + j];
        double s = 1.0 / (1.0 + std::exp(-g)), d = dc.host[r * N + j];
        wout[r * N + j] = g * s * u;
        wdx2[r * 2 * N + j] = d * u * s * (1.0 + g * (1.0 - s));
        wdx2[r * 2 * N + N + j] = d * g * s;
      }
    expect("silu_and_mul fwd " + at, read(out), wout, dtype);
    expect("silu_and_mul bwd " + at, read(dx2), wdx2, dtype);

    // RMSNorm with a Gemma-style offset.
    float eps = 1e-6f, offset = 1.0f;
    Tensor w = make({N}, dtype, true), y = make({M, N}, dtype, false);
    Tensor dx = make({M, N}, dtype, false), dw = make({N}, dtype, false);
    check("rms_norm fwd " + at,
          ops.rmsNormForward(a.view, w.view, eps, offset, y.view));
    check("rms_norm bwd " + at, ops.rmsNormBackward(a.view, w.view, eps, offset,
                                                    dc.view, dx.view, dw.view));
    check("sync " + at, rt::synchronize(ops.device()));
    // dW is a sum over the rows that cancels, and dx = rstd·(g − x̂·mean)
    // cancels too (to ~0 at width 1, where x̂² ≈ 1): both are judged
    // against the size of their terms, which their f32 rounding scales with.
    std::vector<double> wy(count), wdx(count), wdw(N, 0.0), dwTerms(N, 0.0);
    std::vector<double> dxTerms(count);
    std::vector<double> rstds(M);
    for (int64_t r = 0; r < M; ++r) {
      const double *xr = &a.host[r * N], *gr = &dc.host[r * N];
      double squares = 0;
      for (int64_t j = 0; j < N; ++j)
        squares += xr[j] * xr[j];
      double rstd = rstds[r] = 1.0 / std::sqrt(squares / N + eps), dot = 0;
      for (int64_t j = 0; j < N; ++j)
        dot += xr[j] * rstd * gr[j] * (w.host[j] + offset);
      for (int64_t j = 0; j < N; ++j) {
        double xhat = xr[j] * rstd, g = gr[j] * (w.host[j] + offset);
        wy[r * N + j] = xhat * (w.host[j] + offset);
        wdx[r * N + j] = rstd * (g - xhat * dot / N);
        dxTerms[r * N + j] = rstd * (std::fabs(g) + std::fabs(xhat * dot / N));
        wdw[j] += gr[j] * xhat;
        dwTerms[j] += std::fabs(gr[j] * xhat);
      }
    }
    expect("rms_norm fwd " + at, read(y), wy, dtype);
    expect("rms_norm bwd dx " + at, read(dx), wdx, dtype, &dxTerms);
    expect("rms_norm bwd dw " + at, read(dw), wdw, dtype, &dwTerms);

    // Determinism: the same call gives the same dW bits.
    Tensor dwAgain = make({N}, dtype, false);
    check("rms_norm bwd again " + at,
          ops.rmsNormBackward(a.view, w.view, eps, offset, dc.view, dx.view,
                              dwAgain.view));
    check("sync " + at, rt::synchronize(ops.device()));
    std::vector<double> first = read(dw), second = read(dwAgain);
    report("rms_norm dw deterministic " + at,
           std::memcmp(first.data(), second.data(),
                       first.size() * sizeof(double)) == 0,
           "dW differs between two identical calls");

    // main_grad: two accumulating calls give main_grad + g1 + g2.
    Tensor mg = make({N}, DType::F32, true, 0.0, 1.0);
    std::vector<double> start = read(mg);
    Tensor dc2 = make({M, N}, dtype, true);
    check("rms_norm main_grad 1 " + at,
          ops.rmsNormBackwardAccumulate(a.view, w.view, eps, offset, dc.view,
                                        dx.view, mg.view));
    check("rms_norm main_grad 2 " + at,
          ops.rmsNormBackwardAccumulate(a.view, w.view, eps, offset, dc2.view,
                                        dx.view, mg.view));
    check("sync " + at, rt::synchronize(ops.device()));
    std::vector<double> want(N), scale(N);
    for (int64_t j = 0; j < N; ++j) {
      want[j] = start[j] + wdw[j];
      scale[j] = dwTerms[j];
    }
    for (int64_t r = 0; r < M; ++r)
      for (int64_t j = 0; j < N; ++j) {
        double term = dc2.host[r * N + j] * a.host[r * N + j] * rstds[r];
        want[j] += term;
        scale[j] += std::fabs(term);
      }
    // Accumulated in f32 whatever the input dtype: f32 tolerances, scaled
    // by the terms of the sums.
    expect("rms_norm main_grad = start + g1 + g2 " + at, read(mg), want,
           DType::F32, &scale);
  }
};
} // namespace

int main(int argc, char **argv) {
  bool quick = false, small = false;
  int64_t rowsPerCta = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick")
      quick = true;
    else if (arg == "--small")
      small = true;
    else if (arg.rfind("--rows-per-cta=", 0) == 0)
      rowsPerCta = std::atoll(arg.c_str() + 15);
    else {
      std::fprintf(stderr, "error: unknown option %s\n", arg.c_str());
      return 2;
    }
  }
  auto ops = ops::Operators::create(0, "", rowsPerCta);
  if (!ops) {
    std::fprintf(stderr, "error: %s\n", ops.message().c_str());
    return 1;
  }
  std::printf(
      "device: %s (%s)%s\n", (*ops)->device().name().c_str(),
      (*ops)->device().chip().c_str(),
      rowsPerCta ? (", " + std::to_string(rowsPerCta) + " rows per CTA").c_str()
                 : "");
  Suite suite{**ops};
  // Argument errors reach the caller as messages, on the GPU path too.
  Tensor odd = suite.make({7, 13}, DType::BF16, true);
  Tensor half = suite.make({7, 6}, DType::BF16, false);
  rt::Status rejected = (*ops)->siluAndMulForward(odd.view, half.view);
  suite.report("silu_and_mul rejects an odd width",
               !rejected && rejected.message().find("even last dimension") !=
                                std::string::npos,
               rejected.message());
  std::vector<int64_t> rows = quick   ? std::vector<int64_t>{1, 7, 13}
                              : small ? std::vector<int64_t>{7}
                                      : std::vector<int64_t>{1, 7, 13, 4096};
  std::vector<int64_t> widths =
      small ? std::vector<int64_t>{13, 1000}
            : std::vector<int64_t>{1,    13,   100,  333,  1000,
                                   1500, 3000, 4096, 11008};
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (int64_t M : rows)
      for (int64_t N : widths)
        suite.run(dtype, M, N);
  std::printf("%d passed, %d failed\n", suite.passed, suite.failed);
  return suite.failed ? 1 : 0;
}
