//===- MLPTests.cpp - the tiled SwiGLU MLP on the GPU vs float64 ----------===//
//
// For S ∈ {1, 7, 100, 1000}, H ∈ {64, 100}, I ∈ {128, 300} at bf16 and f32
// (f16 on a subset): the forward and the backward of every shard plan —
// one shard, three (which divides none of the S), a memory budget of seven
// rows per shard, and the untiled step — against a float64 reference of the
// same rounded inputs; every tiled plan against one shard; main_grad
// accumulation (g1 + g2) and overwrite (g2 into a NaN-poisoned buffer);
// a wrong main_grad is refused with a message.
//
// Tolerances, per element, against the float64 reference:
//   |got − want| ≤ tol · (rms(want) + Σ|terms|),
//   tol = 3e-2 (bf16), 5e-3 (f16), 1e-4 (f32),
// where Σ|terms| is the sum of the magnitudes of the products the element
// sums (for main_grad gate[j][k]: Σ_r |dg[r][j]·x[r][k]|). The bf16/f16
// paths round g, u, h, dh, dg and du to the dtype between the GEMMs, as
// every framework does, so each term carries a relative error and the sum
// an error bounded by Σ|terms|, not by |sum|: with |want| in its place, a
// gate element summing 7 rows that nearly cancel missed by 1.06× in one
// run. rms(want) covers the absolute error of dg near silu's turning
// point, where dg is ≈ 0 but the rounding of g still moves it.
//
//===----------------------------------------------------------------------===//

#include "MLPReference.h"

#include "tile/Ops/TiledMLP.h"

namespace tile::gputests {

Gradients plus(Gradients a, const Gradients &b) {
  for (auto [into, from] : {std::pair{&a.dx, &b.dx},
                            {&a.gate, &b.gate},
                            {&a.up, &b.up},
                            {&a.down, &b.down}})
    for (size_t i = 0; i < into->size(); ++i)
      (*into)[i] += (*from)[i];
  return a;
}

Reference reference(const std::vector<double> &x, const std::vector<double> &wg,
                    const std::vector<double> &wu,
                    const std::vector<double> &wd,
                    const std::vector<double> &dy, int64_t S, int64_t H,
                    int64_t I) {
  Reference ref;
  ref.y.assign(S * H, 0.0);
  ref.grads.dx.assign(S * H, 0.0);
  ref.grads.gate.assign(I * H, 0.0);
  ref.grads.up.assign(I * H, 0.0);
  ref.grads.down.assign(H * I, 0.0);
  ref.yTerms = ref.y;
  ref.terms = ref.grads;
  std::vector<double> g(I), u(I), h(I), dg(I), du(I);
  for (int64_t r = 0; r < S; ++r) {
    const double *xr = &x[r * H], *dyr = &dy[r * H];
    for (int64_t j = 0; j < I; ++j) {
      double gs = 0, us = 0;
      for (int64_t k = 0; k < H; ++k) {
        gs += xr[k] * wg[j * H + k];
        us += xr[k] * wu[j * H + k];
      }
      g[j] = gs;
      u[j] = us;
      double s = 1.0 / (1.0 + std::exp(-gs));
      h[j] = gs * s * us;
      double dh = 0;
      for (int64_t c = 0; c < H; ++c)
        dh += dyr[c] * wd[c * I + j];
      dg[j] = dh * us * s * (1.0 + gs * (1.0 - s));
      du[j] = dh * gs * s;
    }
    for (int64_t c = 0; c < H; ++c) {
      double sum = 0;
      for (int64_t j = 0; j < I; ++j) {
        sum += h[j] * wd[c * I + j];
        ref.yTerms[r * H + c] += std::fabs(h[j] * wd[c * I + j]);
        ref.grads.down[c * I + j] += dyr[c] * h[j];
        ref.terms.down[c * I + j] += std::fabs(dyr[c] * h[j]);
      }
      ref.y[r * H + c] = sum;
    }
    for (int64_t j = 0; j < I; ++j)
      for (int64_t k = 0; k < H; ++k) {
        ref.grads.dx[r * H + k] +=
            dg[j] * wg[j * H + k] + du[j] * wu[j * H + k];
        ref.terms.dx[r * H + k] +=
            std::fabs(dg[j] * wg[j * H + k]) + std::fabs(du[j] * wu[j * H + k]);
        ref.grads.gate[j * H + k] += dg[j] * xr[k];
        ref.terms.gate[j * H + k] += std::fabs(dg[j] * xr[k]);
        ref.grads.up[j * H + k] += du[j] * xr[k];
        ref.terms.up[j * H + k] += std::fabs(du[j] * xr[k]);
      }
  }
  return ref;
}

void expectClose(Suite &suite, const std::string &name,
                 const std::vector<double> &got,
                 const std::vector<double> &want,
                 const std::vector<double> &terms, DType dtype) {
  double tol = dtype == DType::F32 ? 1e-4 : dtype == DType::F16 ? 5e-3 : 3e-2;
  double squares = 0;
  for (double w : want)
    squares += w * w;
  double rms = want.empty() ? 0.0 : std::sqrt(squares / want.size());
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double allowed = tol * (rms + terms[i]);
    double error = std::fabs(got[i] - want[i]);
    if (!(error <= allowed))
      ++bad;
    worst = std::max(worst, allowed > 0 ? error / allowed : error);
  }
  suite.report(name, bad == 0 && got.size() == want.size(),
               std::to_string(bad) + " of " + std::to_string(want.size()) +
                   " elements outside tolerance (worst at " +
                   std::to_string(worst) + " of the allowed error)");
}

namespace {
struct Outputs {
  std::vector<double> y;
  Gradients grads;
};

/// One shape's inputs, outputs and float64 references, which every plan's
/// checks share.
struct ShapeTest {
  ShapeTest(Suite &suite, DType dtype, int64_t S, int64_t H, int64_t I)
      : suite(suite), dtype(dtype), S(S), H(H), I(I) {
    at = std::string(rt::name(dtype)) + " S=" + std::to_string(S) +
         " H=" + std::to_string(H) + " I=" + std::to_string(I);
    double wh = 1.0 / std::sqrt(double(H)), wi = 1.0 / std::sqrt(double(I));
    x = suite.make({S, H}, dtype, true, -1.0, 1.0);
    dy = suite.make({S, H}, dtype, true, -1.0, 1.0);
    dy2 = suite.make({S, H}, dtype, true, -1.0, 1.0);
    // I = 300 uses one fused [2I, H] gate/up weight (and main_grad), I = 128
    // separate ones.
    fused = I == 300;
    gateUp = suite.make({2 * I, H}, dtype, true, -wh, wh);
    gate = suite.make({I, H}, dtype, true, -wh, wh);
    up = suite.make({I, H}, dtype, true, -wh, wh);
    down = suite.make({H, I}, dtype, true, -wi, wi);
    weights = ops::MLPWeights{gate.view, up.view, down.view};
    std::vector<double> wg = gate.host, wu = up.host;
    if (fused) {
      weights = *ops::MLPWeights::fused(gateUp.view, down.view);
      wg.assign(gateUp.host.begin(), gateUp.host.begin() + I * H);
      wu.assign(gateUp.host.begin() + I * H, gateUp.host.end());
    }
    ref = reference(x.host, wg, wu, down.host, dy.host, S, H, I);
    ref2 = reference(x.host, wg, wu, down.host, dy2.host, S, H, I);

    y = suite.make({S, H}, dtype, false);
    dx = suite.make({S, H}, dtype, false);
    gradGateUp = suite.make({2 * I, H}, DType::F32, false);
    gradGate = suite.make({I, H}, DType::F32, false);
    gradUp = suite.make({I, H}, DType::F32, false);
    gradDown = suite.make({H, I}, DType::F32, false);
    grads = ops::MLPGradients{gradGate.view, gradUp.view, gradDown.view};
    if (fused)
      grads = *ops::MLPGradients::fused(gradGateUp.view, gradDown.view);
  }

  void readGrads(Gradients &into) {
    into.dx = suite.read(dx);
    into.down = suite.read(gradDown);
    if (fused) {
      std::vector<double> both = suite.read(gradGateUp);
      into.gate.assign(both.begin(), both.begin() + I * H);
      into.up.assign(both.begin() + I * H, both.end());
    } else {
      into.gate = suite.read(gradGate);
      into.up = suite.read(gradUp);
    }
  }

  void poison() {
    for (Tensor *t : {&y, &dx, &gradGateUp, &gradGate, &gradUp, &gradDown})
      (void)t->buffer.fill(0xFF);
  }

  /// Against `want`, with the reference's term magnitudes as the scale.
  void expectAll(const std::string &what, const Outputs &got,
                 const std::vector<double> &wantY, const Gradients &want) {
    const Gradients &terms = ref.terms;
    expectClose(suite, what + " y " + at, got.y, wantY, ref.yTerms, dtype);
    expectClose(suite, what + " dx " + at, got.grads.dx, want.dx, terms.dx,
                dtype);
    // main_grad is f32, but its terms come from the dtype's rounded dg, du
    // and h: the dtype's tolerance.
    expectClose(suite, what + " main_grad gate " + at, got.grads.gate,
                want.gate, terms.gate, dtype);
    expectClose(suite, what + " main_grad up " + at, got.grads.up, want.up,
                terms.up, dtype);
    expectClose(suite, what + " main_grad down " + at, got.grads.down,
                want.down, terms.down, dtype);
  }

  /// Every shard plan against the reference, and the tiled ones against one
  /// shard; false if a plan's MLP could not be created (reported).
  bool testPlans() {
    struct Plan {
      std::string name;
      ops::MLPOptions options;
    };
    ops::MLPOptions one, three, budget, untiled;
    one.shards = 1;
    three.shards = 3;
    budget.memoryBudgetBytes =
        rt::Blas::kWorkspaceBytes + 7 * 3 * I * rt::byteSize(dtype);
    untiled.recompute = false;
    std::vector<Plan> plans = {{"1 shard", one},
                               {"3 shards", three},
                               {"7-row budget", budget},
                               {"untiled", untiled}};
    Outputs single;
    for (const Plan &plan : plans) {
      std::string name = "mlp " + plan.name;
      auto mlp = ops::TiledSwiGLUMLP::create(suite.ops, plan.options);
      if (!mlp) {
        suite.report(name + " create " + at, false, mlp.message());
        return false;
      }
      poison();
      suite.check(name + " forward " + at,
                  (*mlp)->forward(weights, x.view, y.view));
      // Overwrite into NaN-poisoned main_grad: beta = 0 never reads it.
      suite.check(
          name + " backward " + at,
          (*mlp)->backward(weights, x.view, dy.view, dx.view, grads, true));
      suite.check(name + " sync " + at, rt::synchronize(suite.ops.device()));
      Outputs got;
      got.y = suite.read(y);
      readGrads(got.grads);
      expectAll(name, got, ref.y, ref.grads);
      if (plan.name == "1 shard") {
        single = got;
        continue;
      }
      int64_t rows = (*mlp)->lastPlan().rowsPerShard;
      if (plan.name == "7-row budget")
        suite.report(
            name + " shards " + at,
            rows <= 7 && (*mlp)->lastPlan().shards == (S + rows - 1) / rows,
            "planned " + std::to_string((*mlp)->lastPlan().shards) +
                " shards of " +
                std::to_string((*mlp)->lastPlan().rowsPerShard) + " rows");
      // Tiled equals one shard.
      expectAll(name + " vs 1 shard", got, single.y, single.grads);
    }
    return true;
  }

  /// Accumulation with three shards: g1 (overwrite), then + g2; then
  /// overwrite with g2 alone.
  void testAccumulation() {
    ops::MLPOptions three;
    three.shards = 3;
    auto mlp = ops::TiledSwiGLUMLP::create(suite.ops, three);
    if (!mlp) {
      suite.report("mlp accumulate create " + at, false, mlp.message());
      return;
    }
    poison();
    suite.check(
        "mlp accumulate g1 " + at,
        (*mlp)->backward(weights, x.view, dy.view, dx.view, grads, true));
    suite.check(
        "mlp accumulate g2 " + at,
        (*mlp)->backward(weights, x.view, dy2.view, dx.view, grads, false));
    suite.check("mlp accumulate sync " + at,
                rt::synchronize(suite.ops.device()));
    Gradients sum;
    readGrads(sum);
    Gradients want = plus(ref.grads, ref2.grads),
              terms = plus(ref.terms, ref2.terms);
    expectClose(suite, "mlp main_grad gate = g1 + g2 " + at, sum.gate,
                want.gate, terms.gate, dtype);
    expectClose(suite, "mlp main_grad up = g1 + g2 " + at, sum.up, want.up,
                terms.up, dtype);
    expectClose(suite, "mlp main_grad down = g1 + g2 " + at, sum.down,
                want.down, terms.down, dtype);
    expectClose(suite, "mlp dx of the second call " + at, sum.dx, ref2.grads.dx,
                ref2.terms.dx, dtype);
    suite.check(
        "mlp overwrite g2 " + at,
        (*mlp)->backward(weights, x.view, dy2.view, dx.view, grads, true));
    suite.check("mlp overwrite sync " + at,
                rt::synchronize(suite.ops.device()));
    Gradients second;
    readGrads(second);
    expectClose(suite, "mlp overwrite main_grad gate = g2 " + at, second.gate,
                ref2.grads.gate, ref2.terms.gate, dtype);
    expectClose(suite, "mlp overwrite main_grad down = g2 " + at, second.down,
                ref2.grads.down, ref2.terms.down, dtype);
  }

  Suite &suite;
  DType dtype;
  int64_t S, H, I;
  std::string at;
  bool fused = false;
  Tensor x, dy, dy2, gateUp, gate, up, down;
  ops::MLPWeights weights;
  Reference ref, ref2;
  Tensor y, dx, gradGateUp, gradGate, gradUp, gradDown;
  ops::MLPGradients grads;
};

void testShape(Suite &suite, DType dtype, int64_t S, int64_t H, int64_t I) {
  ShapeTest test(suite, dtype, S, H, I);
  if (!test.testPlans())
    return;
  test.testAccumulation();
}
} // namespace

void testTiledMLP(Suite &suite, bool quick, bool small) {
  if (small) {
    testShape(suite, DType::BF16, 7, 64, 128);
  } else {
    std::vector<int64_t> sequences =
        quick ? std::vector<int64_t>{1, 7, 100}
              : std::vector<int64_t>{1, 7, 100, 1000};
    for (DType dtype : {DType::BF16, DType::F32})
      for (int64_t S : sequences)
        for (int64_t H : {64, 100})
          for (int64_t I : {128, 300})
            testShape(suite, dtype, S, H, I);
    testShape(suite, DType::F16, 100, 64, 300);
    testShape(suite, DType::F16, 7, 100, 128);
  }

  // A wrong main_grad is refused, with what is wrong.
  auto mlp = ops::TiledSwiGLUMLP::create(suite.ops);
  if (!mlp) {
    suite.report("mlp create", false, mlp.message());
    return;
  }
  Tensor x = suite.make({4, 64}, DType::BF16, true);
  Tensor gate = suite.make({128, 64}, DType::BF16, true);
  Tensor down = suite.make({64, 128}, DType::BF16, true);
  Tensor dx = suite.make({4, 64}, DType::BF16, false);
  Tensor wrong = suite.make({128, 64}, DType::F16, false);
  Tensor right = suite.make({64, 128}, DType::F32, false);
  ops::MLPWeights weights{gate.view, gate.view, down.view};
  rt::Status refused =
      (*mlp)->backward(weights, x.view, x.view, dx.view,
                       {wrong.view, wrong.view, right.view}, true);
  suite.report("mlp refuses an f16 main_grad of bf16 weights",
               !refused && refused.message() ==
                               "main_grad of the gate weight has dtype f16, "
                               "expected f32",
               refused.message());
}

} // namespace tile::gputests
