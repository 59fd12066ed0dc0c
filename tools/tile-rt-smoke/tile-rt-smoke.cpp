//===- tile-rt-smoke.cpp - run one generated kernel through tile::rt -----===//
//
// Loads the PTX that `tile-translate --tile-to-ptx` made for
// examples/swiglu.mlir, runs `@swiglu` through the runtime alone on rows x
// width bf16 inputs with the output poisoned, and compares it with a float64
// reference on the host. Until the operators exist, this is how the runtime
// is checked on a GPU machine:
//
//   tile-rt-smoke swiglu.ptx 4096 1000      # prints "ok ..." or exits 1
//
//===----------------------------------------------------------------------===//

#include "tile/Runtime/HostFloat.h"
#include "tile/Runtime/Runtime.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

using namespace tile::rt;

namespace {
int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 4)
    return fail("usage: tile-rt-smoke SWIGLU.ptx ROWS WIDTH");
  std::ifstream file(argv[1]);
  if (!file)
    return fail(std::string("cannot read ") + argv[1]);
  std::stringstream ptx;
  ptx << file.rdbuf();
  int64_t rows = std::atoll(argv[2]), width = std::atoll(argv[3]);
  size_t count = static_cast<size_t>(rows * width);

  StatusOr<Device> device = Device::open();
  if (!device)
    return fail(device.message());
  StatusOr<Module> module = Module::load(*device, ptx.str());
  if (!module)
    return fail(module.message());
  StatusOr<cu::Function> kernel = module->function("swiglu");
  if (!kernel)
    return fail(kernel.message());

  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::vector<uint16_t> a(count), b(count), c(count);
  for (size_t i = 0; i < count; ++i) {
    a[i] = toBF16(uniform(rng));
    b[i] = toBF16(uniform(rng));
  }
  auto da = DeviceBuffer::allocate(*device, count * 2);
  auto db = DeviceBuffer::allocate(*device, count * 2);
  auto dc = DeviceBuffer::allocate(*device, count * 2);
  auto workspace = DeviceBuffer::allocate(*device, 16);
  for (auto *buffer : {&da, &db, &dc, &workspace})
    if (!*buffer)
      return fail(buffer->message());
  Status status = da->copyFromHost(a.data(), count * 2);
  if (status)
    status = db->copyFromHost(b.data(), count * 2);
  if (status)
    status = dc->fill(0xFF); // NaN in bf16: an unwritten output fails
  if (!status)
    return fail(status.message());

  // The manifest's element grid: a CTA per 128 threads × 8 bf16 of the
  // flattened [rows, width] tensors (tile-translate --tile-manifest).
  constexpr int64_t kThreads = 128, kPerCta = kThreads * 8;
  int64_t ctas = (rows * width + kPerCta - 1) / kPerCta;
  // The parameter order of the manifest: a, b, c, rows, width(a), width(b),
  // ctas, workspace.
  KernelArgs args;
  args.pointer(da->data());
  args.pointer(db->data());
  args.pointer(dc->data());
  args.index(rows);
  args.index(width);
  args.index(width);
  args.index(ctas);
  args.pointer(workspace->data());
  LaunchConfig config;
  config.grid = static_cast<unsigned>(ctas);
  config.block = kThreads;
  if (Status s = launch(*device, *kernel, config, args); !s)
    return fail(s.message());
  if (Status s = synchronize(*device); !s)
    return fail(s.message());
  if (Status s = dc->copyToHost(c.data(), count * 2); !s)
    return fail(s.message());

  double worst = 0.0;
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    double x = fromBF16(a[i]), y = fromBF16(b[i]);
    double want = x / (1.0 + std::exp(-x)) * y;
    double got = fromBF16(c[i]);
    double error = std::fabs(got - want);
    if (!(error <= 2e-2 + 1e-2 * std::fabs(want)))
      ++bad;
    worst = std::max(worst, error / std::max(std::fabs(want), 1e-3));
  }
  std::printf("%s swiglu %lldx%lld on %s (%s): %zu mismatches, max relative "
              "error %.2e\n",
              bad ? "FAIL" : "ok", static_cast<long long>(rows),
              static_cast<long long>(width), device->name().c_str(),
              device->chip().c_str(), bad, worst);
  return bad ? 1 : 0;
}
