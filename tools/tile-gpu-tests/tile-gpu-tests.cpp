//===- tile-gpu-tests.cpp - every operator on the GPU vs float64 ---------===//
//
// The on-GPU suite: every operator, forward and backward, at bf16, f16 and
// f32, rows {1, 7, 13, 4096} x widths {1, 13, 100, 333, 1000, 1500, 3000,
// 4096, 11008} and rows {1, 7, 13, 300} x 16384, compared with a float64
// reference computed on the host
// from the same rounded inputs; outputs poisoned with NaN before each run;
// dW bitwise identical across runs; main_grad accumulation gives g1 + g2;
// SwiGLU's, silu_and_mul's and scaled_silu_and_mul's backward in place give
// the bits they give out of place; the same with every
// buffer one element past 16-byte alignment (scalar paths). Then the tiled
// SwiGLU MLP (MLPTests.cpp) and the grouped one (GroupedMLPTests.cpp).
// Ends with "N passed, N failed"; exit status 1 if anything failed.
//
//   tile-gpu-tests [--quick | --small] [--mlp-only] [--rows-per-cta=N]
//                  [--ctas=N] [--row-grid]
//     --quick: rows {1, 7, 13} only
//     --small: one small case per operator and dtype (for compute-sanitizer)
//     --mlp-only: the tiled and grouped MLPs alone
//
//===----------------------------------------------------------------------===//

#include "Suite.h"

#include "tile/Tools/CommandLine.h"

#include "llvm/Support/CommandLine.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace tile;
using namespace tile::gputests;

namespace tile::gputests {
namespace {
/// One dtype and shape of testOperators. SwiGLU's tensors are members, as
/// the later checks reuse them (RMSNorm runs on a and dc); silu_and_mul's
/// are too, so that every tensor lives until the shape is done, as before.
struct OperatorTest {
  OperatorTest(Suite &suite, DType dtype, int64_t M, int64_t N)
      : suite(suite), dtype(dtype), M(M), N(N),
        at(std::string(rt::name(dtype)) + " " + std::to_string(M) + "x" +
           std::to_string(N) + (suite.shift ? " misaligned" : "")),
        count(static_cast<size_t>(M * N)) {}

  /// SwiGLU forward and backward against float64.
  void testSwiGLU() {
    a = suite.make({M, N}, dtype, true);
    b = suite.make({M, N}, dtype, true);
    dc = suite.make({M, N}, dtype, true);
    c = suite.make({M, N}, dtype, false);
    da = suite.make({M, N}, dtype, false);
    db = suite.make({M, N}, dtype, false);
    suite.check("swiglu fwd " + at,
                suite.ops.swigluForward(a.view, b.view, c.view));
    suite.check(
        "swiglu bwd " + at,
        suite.ops.swigluBackward(a.view, b.view, dc.view, da.view, db.view));
    suite.check("sync " + at, rt::synchronize(suite.ops.device()));
    std::vector<double> wc(count), wda(count), wdb(count);
    for (size_t i = 0; i < count; ++i) {
      double x = a.host[i], s = 1.0 / (1.0 + std::exp(-x));
      wc[i] = x * s * b.host[i];
      wda[i] = dc.host[i] * b.host[i] * s * (1.0 + x * (1.0 - s));
      wdb[i] = dc.host[i] * x * s;
    }
    suite.expect("swiglu fwd " + at, suite.read(c), wc, dtype);
    suite.expect("swiglu bwd da " + at, suite.read(da), wda, dtype);
    suite.expect("swiglu bwd db " + at, suite.read(db), wdb, dtype);
  }

  /// In place (the tiled MLP relies on it): the same bits as out of place,
  /// each from its own copy of the inputs.
  void testSwiGLUInPlace() {
    Tensor fa = suite.copy(a), fb = suite.copy(b);
    Tensor ba = suite.copy(a), bb = suite.copy(b);
    suite.check("swiglu in place " + at,
                suite.ops.swigluForward(fa.view, fb.view, fa.view));
    suite.check(
        "swiglu bwd in place " + at,
        suite.ops.swigluBackward(ba.view, bb.view, dc.view, ba.view, bb.view));
    suite.check("sync " + at, rt::synchronize(suite.ops.device()));
    suite.report("swiglu fwd in place = out of place " + at,
                 suite.read(fa) == suite.read(c), "results differ");
    suite.report("swiglu bwd in place = out of place " + at,
                 suite.read(ba) == suite.read(da) &&
                     suite.read(bb) == suite.read(db),
                 "results differ");
    // The backward that also returns the forward (return-primal): the bits
    // of the two separate kernels, out of place and in place (da over a,
    // db over b, c over dc, as the tiled MLP's backward runs it).
    auto expectBackwardWithForward = [&](const std::string &name,
                                         const Tensor &ta, const Tensor &tb,
                                         const Tensor &tdc, const Tensor &tda,
                                         const Tensor &tdb, const Tensor &tc) {
      suite.check(name + " " + at,
                  suite.ops.swigluBackwardWithForward(
                      ta.view, tb.view, tdc.view, tda.view, tdb.view, tc.view));
      suite.check("sync " + at, rt::synchronize(suite.ops.device()));
      suite.report(name + " = bwd, fwd " + at,
                   suite.read(tc) == suite.read(c) &&
                       suite.read(tda) == suite.read(da) &&
                       suite.read(tdb) == suite.read(db),
                   "results differ from the separate kernels");
    };
    Tensor pc = suite.make({M, N}, dtype, false),
           pda = suite.make({M, N}, dtype, false),
           pdb = suite.make({M, N}, dtype, false);
    expectBackwardWithForward("swiglu bwd+fwd", a, b, dc, pda, pdb, pc);
    Tensor ia = suite.copy(a), ib = suite.copy(b), idc = suite.copy(dc);
    expectBackwardWithForward("swiglu bwd+fwd in place", ia, ib, idc, ia, ib,
                              idc);
  }

  /// silu_and_mul on [M, 2N], with dc as its output's gradient.
  void testSiluAndMul() {
    x2 = suite.make({M, 2 * N}, dtype, true);
    out = suite.make({M, N}, dtype, false);
    dx2 = suite.make({M, 2 * N}, dtype, false);
    suite.check("silu_and_mul fwd " + at,
                suite.ops.siluAndMulForward(x2.view, out.view));
    suite.check("silu_and_mul bwd " + at,
                suite.ops.siluAndMulBackward(x2.view, dc.view, dx2.view));
    suite.check("sync " + at, rt::synchronize(suite.ops.device()));
    std::vector<double> wout(count), wdx2(2 * count);
    for (int64_t r = 0; r < M; ++r)
      for (int64_t j = 0; j < N; ++j) {
        double g = x2.host[r * 2 * N + j], u = x2.host[r * 2 * N + N + j];
        double s = 1.0 / (1.0 + std::exp(-g)), d = dc.host[r * N + j];
        wout[r * N + j] = g * s * u;
        wdx2[r * 2 * N + j] = d * u * s * (1.0 + g * (1.0 - s));
        wdx2[r * 2 * N + N + j] = d * g * s;
      }
    suite.expect("silu_and_mul fwd " + at, suite.read(out), wout, dtype);
    suite.expect("silu_and_mul bwd " + at, suite.read(dx2), wdx2, dtype);
  }

  /// silu_and_mul's backward in place (the MLP runs it over [g u]): dx
  /// over x, and with return-primal out over dc too; the bits of the
  /// out-of-place calls.
  void testSiluAndMulInPlace() {
    Tensor ix = suite.copy(x2);
    suite.check("silu_and_mul bwd in place " + at,
                suite.ops.siluAndMulBackward(ix.view, dc.view, ix.view));
    Tensor px = suite.copy(x2), pdc = suite.copy(dc);
    suite.check("silu_and_mul bwd+fwd in place " + at,
                suite.ops.siluAndMulBackwardWithForward(px.view, pdc.view,
                                                        px.view, pdc.view));
    suite.check("sync " + at, rt::synchronize(suite.ops.device()));
    std::vector<double> want = suite.read(dx2);
    suite.report("silu_and_mul bwd in place = out of place " + at,
                 suite.read(ix) == want, "results differ");
    suite.report("silu_and_mul bwd+fwd in place = bwd, fwd " + at,
                 suite.read(px) == want && suite.read(pdc) == suite.read(out),
                 "results differ from the separate kernels");
  }

  /// silu_and_mul scaled by a weight a row (the MoE step's routing
  /// weights): against float64, and its backward in place (dx over x; the
  /// row sums ds read x in a pass of their own, before dx is written), with
  /// and without return-primal, the bits of the out-of-place call.
  void testScaledSiluAndMul() {
    Tensor s = suite.make({M}, DType::F32, true, 0.0, 1.0);
    Tensor sout = suite.make({M, N}, dtype, false),
           sdx = suite.make({M, 2 * N}, dtype, false),
           sds = suite.make({M}, DType::F32, false);
    suite.check("scaled_silu_and_mul fwd " + at,
                suite.ops.scaledSiluAndMulForward(x2.view, s.view, sout.view));
    suite.check("scaled_silu_and_mul bwd " + at,
                suite.ops.scaledSiluAndMulBackward(x2.view, s.view, dc.view,
                                                   sdx.view, sds.view));
    Tensor ix = suite.copy(x2), ids = suite.make({M}, DType::F32, false);
    suite.check("scaled_silu_and_mul bwd in place " + at,
                suite.ops.scaledSiluAndMulBackward(ix.view, s.view, dc.view,
                                                   ix.view, ids.view));
    Tensor px = suite.copy(x2), pdc = suite.copy(dc),
           pds = suite.make({M}, DType::F32, false);
    suite.check("scaled_silu_and_mul bwd+fwd in place " + at,
                suite.ops.scaledSiluAndMulBackwardWithForward(
                    px.view, s.view, pdc.view, px.view, pds.view, pdc.view));
    suite.check("sync " + at, rt::synchronize(suite.ops.device()));
    std::vector<double> wout(count), wdx(2 * count), wds(M, 0.0),
        dsTerms(M, 0.0);
    for (int64_t r = 0; r < M; ++r)
      for (int64_t j = 0; j < N; ++j) {
        double g = x2.host[r * 2 * N + j], u = x2.host[r * 2 * N + N + j];
        double sig = 1.0 / (1.0 + std::exp(-g)), d = dc.host[r * N + j];
        double w = s.host[r];
        wout[r * N + j] = g * sig * u * w;
        wdx[r * 2 * N + j] = d * w * u * sig * (1.0 + g * (1.0 - sig));
        wdx[r * 2 * N + N + j] = d * w * g * sig;
        wds[r] += d * g * sig * u;
        dsTerms[r] += std::fabs(d * g * sig * u);
      }
    suite.expect("scaled_silu_and_mul fwd " + at, suite.read(sout), wout,
                 dtype);
    suite.expect("scaled_silu_and_mul bwd dx " + at, suite.read(sdx), wdx,
                 dtype);
    suite.expect("scaled_silu_and_mul bwd ds " + at, suite.read(sds), wds,
                 DType::F32, &dsTerms);
    std::vector<double> dx = suite.read(sdx), ds = suite.read(sds);
    suite.report("scaled_silu_and_mul bwd in place = out of place " + at,
                 suite.read(ix) == dx && suite.read(ids) == ds,
                 "results differ");
    suite.report("scaled_silu_and_mul bwd+fwd in place = bwd, fwd " + at,
                 suite.read(px) == dx && suite.read(pds) == ds &&
                     suite.read(pdc) == suite.read(sout),
                 "results differ from the separate kernels");
  }

  /// RMSNorm with a Gemma-style offset: forward, backward, dW's
  /// determinism and main_grad accumulation.
  void testRMSNorm() {
    float eps = 1e-6f, offset = 1.0f;
    Tensor w = suite.make({N}, dtype, true),
           y = suite.make({M, N}, dtype, false);
    Tensor dx = suite.make({M, N}, dtype, false),
           dw = suite.make({N}, dtype, false);
    suite.check("rms_norm fwd " + at,
                suite.ops.rmsNormForward(a.view, w.view, eps, offset, y.view));
    suite.check("rms_norm bwd " + at,
                suite.ops.rmsNormBackward(a.view, w.view, eps, offset, dc.view,
                                          dx.view, dw.view));
    suite.check("sync " + at, rt::synchronize(suite.ops.device()));
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
    suite.expect("rms_norm fwd " + at, suite.read(y), wy, dtype);
    suite.expect("rms_norm bwd dx " + at, suite.read(dx), wdx, dtype, &dxTerms);
    suite.expect("rms_norm bwd dw " + at, suite.read(dw), wdw, dtype, &dwTerms);

    // Determinism: the same call gives the same dW bits.
    Tensor dwAgain = suite.make({N}, dtype, false);
    suite.check("rms_norm bwd again " + at,
                suite.ops.rmsNormBackward(a.view, w.view, eps, offset, dc.view,
                                          dx.view, dwAgain.view));
    suite.check("sync " + at, rt::synchronize(suite.ops.device()));
    std::vector<double> first = suite.read(dw), second = suite.read(dwAgain);
    suite.report("rms_norm dw deterministic " + at,
                 std::memcmp(first.data(), second.data(),
                             first.size() * sizeof(double)) == 0,
                 "dW differs between two identical calls");

    // main_grad: two accumulating calls give main_grad + g1 + g2.
    Tensor mg = suite.make({N}, DType::F32, true, 0.0, 1.0);
    std::vector<double> start = suite.read(mg);
    Tensor dc2 = suite.make({M, N}, dtype, true);
    suite.check("rms_norm main_grad 1 " + at,
                suite.ops.rmsNormBackwardAccumulate(a.view, w.view, eps, offset,
                                                    dc.view, dx.view, mg.view));
    suite.check("rms_norm main_grad 2 " + at,
                suite.ops.rmsNormBackwardAccumulate(
                    a.view, w.view, eps, offset, dc2.view, dx.view, mg.view));
    suite.check("sync " + at, rt::synchronize(suite.ops.device()));
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
    suite.expect("rms_norm main_grad = start + g1 + g2 " + at, suite.read(mg),
                 want, DType::F32, &scale);
  }

  Suite &suite;
  DType dtype;
  int64_t M, N;
  std::string at;
  size_t count;
  Tensor a, b, dc, c, da, db;
  Tensor x2, out, dx2;
};
} // namespace

void testOperators(Suite &suite, DType dtype, int64_t M, int64_t N) {
  OperatorTest test(suite, dtype, M, N);
  test.testSwiGLU();
  test.testSwiGLUInPlace();
  test.testSiluAndMul();
  test.testSiluAndMulInPlace();
  test.testScaledSiluAndMul();
  test.testRMSNorm();
}

/// RMSNorm's backward with no rows: dW is zero (written over the poison),
/// and main_grad is left as it was. The finalize kernel sums no partial
/// rows; a folded one (--fold-finalize) launches one CTA that has none.
void testEmptyBatch(Suite &suite, DType dtype, int64_t N) {
  std::string at = std::string(rt::name(dtype)) + " 0x" + std::to_string(N);
  Tensor x = suite.make({0, N}, dtype, true),
         dy = suite.make({0, N}, dtype, true);
  Tensor w = suite.make({N}, dtype, true);
  Tensor dx = suite.make({0, N}, dtype, false),
         dw = suite.make({N}, dtype, false);
  suite.check("rms_norm bwd " + at,
              suite.ops.rmsNormBackward(x.view, w.view, 1e-6f, 0.0f, dy.view,
                                        dx.view, dw.view));
  Tensor mg = suite.make({N}, DType::F32, true);
  std::vector<double> start = suite.read(mg);
  suite.check("rms_norm main_grad " + at,
              suite.ops.rmsNormBackwardAccumulate(x.view, w.view, 1e-6f, 0.0f,
                                                  dy.view, dx.view, mg.view));
  suite.check("sync " + at, rt::synchronize(suite.ops.device()));
  suite.expect("rms_norm bwd dw with no rows " + at, suite.read(dw),
               std::vector<double>(N, 0.0), dtype);
  suite.expect("rms_norm main_grad with no rows " + at, suite.read(mg), start,
               DType::F32);
}
} // namespace tile::gputests

namespace {
namespace cl = llvm::cl;
/// A caller with no current context (or another device's: a framework's
/// current device) keeps it: the first call loads its module, allocates and
/// launches in the device's own context and restores the caller's. Runs
/// first, so that the module is loaded here.
void testCallerContext(Suite &suite) {
  const rt::DriverApi &driver = suite.ops.device().driver();
  suite.check("no current context",
              rt::check(driver.ctxSetCurrent(nullptr), "cuCtxSetCurrent"));
  Tensor a = suite.make({5, 64}, DType::BF16, true),
         b = suite.make({5, 64}, DType::BF16, true);
  Tensor c = suite.make({5, 64}, DType::BF16, false);
  suite.check("swiglu without a current context",
              suite.ops.swigluForward(a.view, b.view, c.view));
  suite.check("sync", rt::synchronize(suite.ops.device()));
  rt::cu::Context current = reinterpret_cast<rt::cu::Context>(1);
  suite.check("cuCtxGetCurrent",
              rt::check(driver.ctxGetCurrent(&current), "cuCtxGetCurrent"));
  suite.report("the caller's (empty) current context is kept",
               current == nullptr, "a call left its device's context current");
  std::vector<double> want(a.host.size());
  for (size_t i = 0; i < want.size(); ++i)
    want[i] = a.host[i] / (1.0 + std::exp(-a.host[i])) * b.host[i];
  suite.expect("swiglu without a current context", suite.read(c), want,
               DType::BF16);
}

cl::OptionCategory category("tile-gpu-tests options");
cl::opt<bool> quick("quick", cl::desc("fewer shapes: rows 1, 7, 13"),
                    cl::cat(category));
cl::opt<bool> small("small", cl::desc("a few shapes (for compute-sanitizer)"),
                    cl::cat(category));
cl::opt<bool> mlpOnly("mlp-only",
                      cl::desc("only the tiled and grouped MLPs' tests"),
                      cl::cat(category));
// --threads-per-cta, --ctas, --rows-per-cta, --row-grid, --fold-finalize,
// --vector-width (ScheduleOptions.def). Few persistent CTAs (--ctas=2):
// each walks many rows (pipelined loads, the exchanges' alternating slots
// across rows), and row-reducing kernels are persistent too.
mlir::tile::ScheduleCommandLine scheduleFlags(category);
} // namespace

int main(int argc, char **argv) {
  mlir::tile::prepareCommandLine("tile-gpu-tests", {&category},
                                 /*readsIR=*/false);
  cl::ParseCommandLineOptions(argc, argv,
                              "Every operator x dtype x shape on GPU 0 "
                              "against a float64 reference\n");
  ops::ScheduleOverrides overrides;
  static_cast<ScheduleOptions &>(overrides) = scheduleFlags.get();
  auto ops = ops::Operators::create(0, "", overrides);
  if (!ops) {
    std::fprintf(stderr, "error: %s\n", ops.message().c_str());
    return 1;
  }
  std::printf("device: %s (%s)%s\n", (*ops)->device().name().c_str(),
              (*ops)->device().chip().c_str(),
              ops::describe(overrides).c_str());
  Suite suite{**ops};
  if (mlpOnly) {
    testTiledMLP(suite, quick.getValue(), small.getValue());
    testGroupedMLP(suite, quick.getValue(), small.getValue());
    std::printf("%d passed, %d failed\n", suite.passed, suite.failed);
    return suite.failed ? 1 : 0;
  }
  testCallerContext(suite);
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
  // 16384 columns: the widest resident rows (eight f32 chunks a thread in
  // RMSNorm's backward, which loads its weights again after the exchange);
  // not at 4096 rows, which would add minutes of host reference for no
  // other path.
  std::vector<int64_t> widths =
      small ? std::vector<int64_t>{13, 1000}
            : std::vector<int64_t>{1,    13,   100,  333,   1000,
                                   1500, 3000, 4096, 11008, 16384};
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (int64_t M : rows)
      for (int64_t N : widths)
        if (!(N == 16384 && M == 4096))
          testOperators(suite, dtype, M, N);
  for (DType dtype : {DType::BF16, DType::F32})
    for (int64_t N : {13, 4096})
      testEmptyBatch(suite, dtype, N);
  // Every buffer one element past 16-byte alignment: the scalar paths of
  // the element grid and of the row kernels, against the same reference.
  suite.shift = 1;
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (int64_t N : small ? std::vector<int64_t>{13}
                           : std::vector<int64_t>{13, 1000, 4096})
      testOperators(suite, dtype, 7, N);
  suite.shift = 0;
  // More rows than one wave at 16384 columns: where the launcher loaded a
  // register-capped variant (RMSNorm's forward, 16-bit), this grid
  // launches it. Each variant it keeps must hold fewer registers and more
  // CTAs than the kernel as compiled.
  if (!small)
    for (DType dtype : {DType::BF16, DType::F16, DType::F32})
      testOperators(suite, dtype, 300, 16384);
  for (auto &[key, load] : (*ops)->kernelLoads()) {
    if (!load.cappedRegisters)
      continue;
    std::printf("register cap: %s %s\n", key.c_str(),
                ops::describe(load).c_str());
    suite.report("register cap " + key + " " + load.name,
                 load.cappedRegisters < load.registers &&
                     load.cappedResidentCtas > load.residentCtas,
                 "the capped variant gains nothing");
  }
  testTiledMLP(suite, quick.getValue(), small.getValue());
  testGroupedMLP(suite, quick.getValue(), small.getValue());
  std::printf("%d passed, %d failed\n", suite.passed, suite.failed);
  return suite.failed ? 1 : 0;
}
