//===- Ops.h - SwiGLU and RMSNorm, forward and derived backward -*- C++ -*-===//
//
// C++ operators over the JIT and the runtime. The kernels are the ones in
// examples/ — nothing is written by hand for the GPU: the forward is what a
// user wrote, the backward what tile-differentiate derived, both compiled
// for the device's chip, dtype and row width on first use (and cached). Tensors
// are contiguous, any leading shape (flattened into rows), bf16, f16 or f32;
// every call checks shapes, dtypes and pointers and returns a Status. Each
// launches on RunOptions' stream, with its workspace (Launcher.h).
//
// The elementwise operators (swiglu) may run in place — an output the same
// tensor as an input of its shape: every element is read before it is
// written, by the same thread (the GPU suite checks the bits against the
// out-of-place call). The tiled MLP relies on it.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_OPS_OPS_H
#define TILE_OPS_OPS_H

#include "tile/JIT/JIT.h"
#include "tile/Launcher/Launcher.h"
#include "tile/Runtime/Runtime.h"

#include <map>
#include <memory>
#include <mutex>

namespace tile::ops {

/// @stream: z = x + y over f32 [rows, width], Tile's own kernel; what the
/// benchmarks measure a kernel against (the "ceiling" and "same-size"
/// columns of tile-bench, tile-run --bench).
extern const char *const kStreamKernelSource;

using rt::Status;
using rt::TensorView;

/// The source of an operator's kernel (examples/<name>.mlir, embedded at
/// build time); null for another name.
const char *operatorSource(const std::string &name);
/// The name of operator `index` (0, 1, ...: every operator of
/// lib/Ops/CMakeLists.txt's TILE_OPERATORS, in its order); null past the
/// last.
const char *operatorName(size_t index);

/// silu_and_mul's input must be [..., 2H]: an odd width would silently drop
/// a column, so it is an error.
Status checkSiluAndMulInput(const TensorView &x);

/// Experiments' knobs over tile-schedule's choices (ScheduleOptions.def;
/// 0 and false: its default), and one over how kernels load.
struct ScheduleOverrides : ::tile::ScheduleOptions {
  /// Not a schedule but a load-time choice (LoadOptions::registerCaps):
  /// false keeps every kernel as the driver's JIT compiled it.
  bool registerCaps = true;
};

/// The overrides that differ from the defaults, as a tool's banner lists
/// them (", 4 rows per CTA, one CTA per row"); empty for none.
std::string describe(const ScheduleOverrides &overrides);

class Operators {
public:
  /// Opens device `ordinal`; `cacheDir` as for jit::Jit.
  static rt::StatusOr<std::unique_ptr<Operators>>
  create(int ordinal = 0, std::string cacheDir = "",
         ScheduleOverrides overrides = {});

  const rt::Device &device() const { return dev; }

  /// c = silu(a) · b.
  Status swigluForward(const TensorView &a, const TensorView &b,
                       const TensorView &c, const RunOptions &run = {});
  /// da, db from dc.
  Status swigluBackward(const TensorView &a, const TensorView &b,
                        const TensorView &dc, const TensorView &da,
                        const TensorView &db, const RunOptions &run = {});
  /// da, db from dc, and c = silu(a) · b as well (tile-differentiate's
  /// return-primal), in one pass. May run in place (da over a, db over b,
  /// c over dc): every result of a chunk is computed before any is stored.
  Status swigluBackwardWithForward(const TensorView &a, const TensorView &b,
                                   const TensorView &dc, const TensorView &da,
                                   const TensorView &db, const TensorView &c,
                                   const RunOptions &run = {});
  /// x is [..., 2H] (gate a, then up b); out = silu(a) · b is [..., H].
  Status siluAndMulForward(const TensorView &x, const TensorView &out,
                           const RunOptions &run = {});
  /// dx [..., 2H] from dout [..., H]. May run in place (dx over x) where H
  /// is specialized even: the chunk that writes column c of dx also writes
  /// column c + H, and reads both of x before (docs/Lowering.md).
  Status siluAndMulBackward(const TensorView &x, const TensorView &dout,
                            const TensorView &dx, const RunOptions &run = {});
  /// dx and out = silu(a) · b as well, in one pass; may run in place (dx
  /// over x, out over dout), as siluAndMulBackward.
  Status siluAndMulBackwardWithForward(const TensorView &x,
                                       const TensorView &dout,
                                       const TensorView &dx,
                                       const TensorView &out,
                                       const RunOptions &run = {});
  /// silu_and_mul with one f32 weight a row: out = silu(a) · b · s, x
  /// [rows, 2H], s [rows] (a mixture of experts' routing weights, applied
  /// before the down projection).
  Status scaledSiluAndMulForward(const TensorView &x, const TensorView &s,
                                 const TensorView &out,
                                 const RunOptions &run = {});
  /// dx [rows, 2H] and ds [rows] (f32, the row sums Σ dout · silu(a) · b)
  /// from dout; in place (dx over x) as siluAndMulBackward.
  Status scaledSiluAndMulBackward(const TensorView &x, const TensorView &s,
                                  const TensorView &dout, const TensorView &dx,
                                  const TensorView &ds,
                                  const RunOptions &run = {});
  /// dx, ds and out = silu(a) · b · s as well, in one pass; may run in
  /// place (dx over x, out over dout).
  Status scaledSiluAndMulBackwardWithForward(
      const TensorView &x, const TensorView &s, const TensorView &dout,
      const TensorView &dx, const TensorView &ds, const TensorView &out,
      const RunOptions &run = {});
  /// y = x · rsqrt(mean(x²) + eps) · (w + offset).
  Status rmsNormForward(const TensorView &x, const TensorView &w, float eps,
                        float offset, const TensorView &y,
                        const RunOptions &run = {});
  /// dx, and dw in w's dtype (overwritten).
  Status rmsNormBackward(const TensorView &x, const TensorView &w, float eps,
                         float offset, const TensorView &dy,
                         const TensorView &dx, const TensorView &dw,
                         const RunOptions &run = {});
  /// dx, and main_grad (fp32, shaped like w) += dW: no separate gradient.
  Status rmsNormBackwardAccumulate(const TensorView &x, const TensorView &w,
                                   float eps, float offset,
                                   const TensorView &dy, const TensorView &dx,
                                   const TensorView &mainGrad,
                                   const RunOptions &run = {});

  jit::Jit &compiler() { return jit; }

  /// How each kernel compiled so far was loaded, keyed by its compilation
  /// ("rms_norm/bf16/w0=16384"): registers, resident CTAs, register caps.
  std::vector<std::pair<std::string, KernelLoad>> kernelLoads();

private:
  Operators(rt::Device device, std::string cacheDir,
            ScheduleOverrides overrides);
  /// Runs `function` of the example `kernel` at the dtype of the first
  /// argument, compiled for the widths of the first `specialized` arguments.
  Status call(const char *kernel, const char *function, bool mainGrad,
              const std::vector<Argument> &arguments,
              const std::vector<TensorView> &results, unsigned specialized,
              const RunOptions &run, bool returnPrimal = false);
  /// The compiled kernels for `kernel` at `dtype`, specialized for the
  /// widths of the call's tensors (by argument index).
  rt::StatusOr<Launcher *> launcher(const char *kernel, rt::DType dtype,
                                    bool mainGrad,
                                    const std::map<unsigned, int64_t> &widths,
                                    bool returnPrimal);

  rt::Device dev;
  jit::Jit jit;
  ScheduleOverrides overrides;
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<Launcher>> launchers;
};

} // namespace tile::ops

#endif // TILE_OPS_OPS_H
