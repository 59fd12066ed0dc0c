//===- embed.cpp - a user's kernel, compiled, differentiated, launched ---===//
//
// How to embed Tile in a C++ program: a kernel written as a string, its
// backward derived by the compiler, both compiled for this GPU and launched,
// and the results checked against the float64 reference evaluator. Nothing
// here is specific to the kernel: change the string and the shapes.
//
//   tile-embed-example            (on a machine without a GPU it compiles
//                                  the kernels, says why it cannot run them,
//                                  and exits 0)
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/InitTile.h"
#include "tile/Interp/Evaluator.h"
#include "tile/Interp/Inputs.h"
#include "tile/JIT/JIT.h"
#include "tile/Launcher/Launcher.h"
#include "tile/Runtime/HostFloat.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <cmath>
#include <cstdio>
#include <cstring>

// A gated tanh: y = tanh(s·x) · g. A user would write this in a file; the
// JIT takes the text either way.
static const char *kKernel = R"mlir(
func.func @gated_tanh(%x: tensor<?x?xbf16>, %g: tensor<?x?xbf16>,
                      %s: f32 {tile.nograd}) -> tensor<?x?xbf16>
    attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %gf = tile.cast %g : tensor<?x?xbf16> to tensor<?x?xf32>
  %sv = tile.splat %s like %xf : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %sx = arith.mulf %xf, %sv : tensor<?x?xf32>
  %t = math.tanh %sx : tensor<?x?xf32>
  %y = arith.mulf %t, %gf : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
)mlir";

namespace interp = tile::interp;
using tile::rt::fromBF16;
using tile::rt::toBF16;

namespace {
int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

/// A bf16 device tensor holding `values` (already bf16-exact).
struct DeviceTensor {
  tile::rt::DeviceBuffer buffer;
  tile::rt::TensorView view;
};

tile::rt::StatusOr<DeviceTensor> upload(const tile::rt::Device &device,
                                        const interp::Buffer &host) {
  auto buffer =
      tile::rt::DeviceBuffer::allocate(device, host.values.size() * 2);
  if (!buffer)
    return buffer.takeStatus();
  std::vector<uint16_t> bits;
  for (double value : host.values)
    bits.push_back(toBF16(value));
  if (auto s = buffer->copyFromHost(bits.data(), bits.size() * 2); !s)
    return s;
  DeviceTensor tensor{std::move(*buffer), {}};
  tensor.view.data = tensor.buffer.data();
  tensor.view.shape = host.shape;
  tensor.view.dtype = tile::rt::DType::BF16;
  return tensor;
}

std::vector<double> download(const DeviceTensor &tensor) {
  std::vector<uint16_t> bits(tensor.buffer.size() / 2);
  (void)tensor.buffer.copyToHost(bits.data(), bits.size() * 2);
  std::vector<double> values;
  for (uint16_t b : bits)
    values.push_back(fromBF16(b));
  return values;
}

/// Largest |got − want| / (2e-2 + 1e-2·|want|): ≤ 1 passes at bf16.
double worst(const std::vector<double> &got, const std::vector<double> &want) {
  double result = 0.0;
  for (size_t i = 0; i < want.size(); ++i)
    result = std::max(result, std::fabs(got[i] - want[i]) /
                                  (2e-2 + 1e-2 * std::fabs(want[i])));
  return result;
}
} // namespace

int main() {
  const int64_t rows = 257, width = 1000;
  const float scale = 0.75f;

  // 1. The device decides the target; without one, compile for sm_80 anyway.
  auto device = tile::rt::Device::open();
  tile::jit::CompileOptions options;
  options.chip = device ? device->chip() : "sm_80";
  options.differentiate = true;
  tile::jit::Jit jit;
  auto kernels = jit.compile(kKernel, options);
  if (!kernels)
    return fail(kernels.message());
  std::printf("compiled @gated_tanh and its derived @gated_tanh_bwd for %s "
              "(%zu bytes of PTX, cache %s)\n",
              options.chip.c_str(), kernels->ptx.size(),
              jit.cacheDirectory().c_str());
  if (!device) {
    std::printf("no GPU to run them on: %s\n", device.message().c_str());
    return 0;
  }

  // 2. The reference: the same kernel and its derived backward, evaluated
  //    in float64 with the GPU's roundings, on seeded bf16 inputs.
  mlir::DialectRegistry registry;
  mlir::tile::registerTileDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kKernel, &context);
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("gated_tanh");
  auto derived = mlir::tile::differentiateKernel(forward);
  if (mlir::failed(derived))
    return fail("differentiation failed");
  interp::InputOptions inputs;
  inputs.seed = 3;
  auto args =
      interp::makeInputs(forward,
                         {std::to_string(rows) + "x" + std::to_string(width),
                          std::to_string(rows) + "x" + std::to_string(width),
                          std::to_string(scale)},
                         inputs);
  interp::Random random(5);
  interp::Buffer dy =
      interp::Buffer::tensor({rows, width}, interp::StorageType::BF16);
  for (double &value : dy.values)
    value = random.uniform(-1.0, 1.0);
  if (!args)
    return fail("making inputs failed: " + llvm::toString(args.takeError()));
  // Round to what the GPU will read.
  for (interp::Buffer *buffer : {&(*args)[0], &(*args)[1], &dy})
    for (double &value : buffer->values)
      value = fromBF16(toBF16(value));
  auto wantY = interp::evaluate(forward, *args);
  std::vector<interp::Buffer> backwardArgs = *args;
  backwardArgs.push_back(dy);
  auto wantGrads = interp::evaluate(derived->backward, backwardArgs);
  if (!wantY || !wantGrads)
    return fail("the reference evaluator failed");

  // 3. The GPU: one launcher per compiled module, bound by the manifest.
  auto launcher = tile::ops::Launcher::create(*device, *kernels);
  if (!launcher)
    return fail(launcher.message());
  auto x = upload(*device, (*args)[0]), g = upload(*device, (*args)[1]);
  auto d = upload(*device, dy);
  auto y = upload(*device, (*wantY)[0]);
  auto dx = upload(*device, (*wantGrads)[0]);
  auto dg = upload(*device, (*wantGrads)[1]);
  for (auto *t : {&x, &g, &d, &y, &dx, &dg})
    if (!*t)
      return fail(t->message());
  for (auto *t : {&y, &dx, &dg}) // poison the outputs
    if (auto s = (*t)->buffer.fill(0xFF); !s)
      return fail(s.message());
  if (auto s =
          (*launcher)->run("gated_tanh", {x->view, g->view, scale}, {y->view});
      !s)
    return fail(s.message());
  if (auto s =
          (*launcher)->run("gated_tanh_bwd", {x->view, g->view, scale, d->view},
                           {dx->view, dg->view});
      !s)
    return fail(s.message());
  if (auto s = tile::rt::synchronize(*device); !s)
    return fail(s.message());

  double errY = worst(download(*y), (*wantY)[0].values);
  double errX = worst(download(*dx), (*wantGrads)[0].values);
  double errG = worst(download(*dg), (*wantGrads)[1].values);
  bool ok = errY <= 1 && errX <= 1 && errG <= 1;
  std::printf("%s: y, dx, dg on %s against the evaluator, at %.2f, %.2f, "
              "%.2f of the bf16 tolerance\n",
              ok ? "ok" : "FAIL", device->name().c_str(), errY, errX, errG);
  return ok ? 0 : 1;
}
