//===- Suite.h - the GPU suite's tensors, reference checks and counts -----===//
//
// Shared by the operator tests (tile-gpu-tests.cpp) and the tiled MLP's
// (MLPTests.cpp): device tensors with their host values as stored, NaN
// poisoning of outputs, and per-element tolerance checks that count passes
// and failures.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_GPU_TESTS_SUITE_H
#define TILE_TOOLS_GPU_TESTS_SUITE_H

#include "tile/Ops/Ops.h"
#include "tile/Runtime/HostFloat.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace tile::gputests {

using rt::DType;
using rt::fromBF16;
using rt::fromF16;
using rt::toBF16;
using rt::toF16;

/// A device tensor with its host values (as stored, converted to double).
struct Tensor {
  rt::DeviceBuffer buffer;
  rt::TensorView view;
  std::vector<double> host;
  /// Elements of the buffer before the view's first (a misaligned view).
  size_t offset = 0;
};

struct Suite {
  ops::Operators &ops;
  std::mt19937 rng{7};
  int passed = 0, failed = 0;
  /// Elements every new tensor starts into its buffer (see make).
  size_t shift = 0;

  /// A device tensor, `offset` (default: shift) elements into its buffer:
  /// 1 is not 16-byte aligned, so kernels take their scalar paths.
  Tensor make(std::vector<int64_t> shape, DType dtype, bool random,
              double low = -2.0, double high = 2.0, size_t offset = SIZE_MAX) {
    if (offset == SIZE_MAX)
      offset = shift;
    Tensor t;
    size_t count = 1;
    for (int64_t size : shape)
      count *= static_cast<size_t>(size);
    size_t elementBytes = rt::byteSize(dtype);
    auto buffer = rt::DeviceBuffer::allocate(
        ops.device(), std::max<size_t>(count + offset, 1) * elementBytes);
    if (!buffer) {
      std::fprintf(stderr, "error: %s\n", buffer.message().c_str());
      std::exit(1);
    }
    t.buffer = std::move(*buffer);
    t.offset = offset;
    t.view.data = t.buffer.data() + offset * elementBytes;
    t.view.shape = shape;
    t.view.dtype = dtype;
    t.host.assign(count, 0.0);
    if (!random) {
      (void)t.buffer.fill(0xFF); // NaN in every float format
      return t;
    }
    std::uniform_real_distribution<double> uniform(low, high);
    std::vector<unsigned char> bytes((count + offset) * elementBytes);
    for (size_t i = 0; i < count; ++i) {
      float value = static_cast<float>(uniform(rng));
      unsigned char *at = &bytes[(offset + i) * elementBytes];
      if (dtype == DType::BF16) {
        uint16_t b = toBF16(value);
        std::memcpy(at, &b, 2);
        t.host[i] = fromBF16(b);
      } else if (dtype == DType::F16) {
        uint16_t h = toF16(value);
        std::memcpy(at, &h, 2);
        t.host[i] = fromF16(h);
      } else {
        std::memcpy(at, &value, 4);
        t.host[i] = value;
      }
    }
    (void)t.buffer.copyFromHost(bytes.data(), bytes.size());
    return t;
  }

  /// A new device tensor with t's contents.
  Tensor copy(const Tensor &t) {
    Tensor c = make(t.view.shape, t.view.dtype, false, 0.0, 0.0, t.offset);
    std::vector<unsigned char> bytes((t.host.size() + t.offset) *
                                     rt::byteSize(t.view.dtype));
    (void)t.buffer.copyToHost(bytes.data(), bytes.size());
    (void)c.buffer.copyFromHost(bytes.data(), bytes.size());
    c.host = t.host;
    return c;
  }

  std::vector<double> read(const Tensor &t) {
    size_t count = t.host.size(), elementBytes = rt::byteSize(t.view.dtype);
    std::vector<unsigned char> bytes((count + t.offset) * elementBytes);
    (void)t.buffer.copyToHost(bytes.data(), bytes.size());
    return rt::decode(t.view.dtype, bytes.data() + t.offset * elementBytes,
                      count);
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
};

/// SwiGLU, silu_and_mul and RMSNorm at one dtype and shape.
void testOperators(Suite &suite, DType dtype, int64_t M, int64_t N);
/// The tiled SwiGLU MLP; `quick` runs fewer shapes, `small` one.
void testTiledMLP(Suite &suite, bool quick, bool small);
/// The grouped (mixture-of-experts) SwiGLU MLP, likewise.
void testGroupedMLP(Suite &suite, bool quick, bool small);

} // namespace tile::gputests

#endif // TILE_TOOLS_GPU_TESTS_SUITE_H
