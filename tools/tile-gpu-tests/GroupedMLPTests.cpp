//===- GroupedMLPTests.cpp - the grouped SwiGLU MLP on the GPU vs float64 -===//
//
// E ∈ {1, 3, 8} experts with uneven splits, some 0, H ∈ {64, 100},
// I ∈ {128, 300} (I = 300 through fused [E, 2I, H] weights and main_grad,
// I = 128 through separate stacked ones; H 256, I 384 fused, for the
// grouped GEMM's tiles; 128 experts), with the splits on the host and on
// the device (the grouped GEMM reads them there), bf16 and f32 (f16 on a
// subset): the forward and the backward under one shard, three shards (whose
// boundaries fall inside experts) and the untiled step, against the dense
// float64 reference of MLPReference.h run per expert on its rows, with
// the same tolerance. main_grad starts NaN-poisoned: overwrite must replace
// it, and zero it for an expert without tokens; a second call accumulates
// (g1 + g2) and leaves an expert without tokens as it was. Bad splits and
// shapes are refused with what is wrong.
//
//===----------------------------------------------------------------------===//

#include "MLPReference.h"

#include "tile/Ops/GroupedMLP.h"

#include <numeric>

namespace tile::gputests {

namespace {

/// Rows [first, first + rows) of a [*, cols] host matrix.
std::vector<double> hostRows(const std::vector<double> &m, int64_t first,
                             int64_t rows, int64_t cols) {
  return {m.begin() + first * cols, m.begin() + (first + rows) * cols};
}

/// Appends `part` to `into` at element `at`.
void place(std::vector<double> &into, const std::vector<double> &part,
           size_t at) {
  std::copy(part.begin(), part.end(), into.begin() + at);
}

/// Every expert's host weights: gate and up [I, H], down [H, I].
struct HostExperts {
  std::vector<std::vector<double>> gate, up, down;
};

/// The grouped MLP in float64, expert by expert: y and dx [T, H], and the
/// gradients stacked [E, …] like main_grad.
Reference groupedReference(const std::vector<double> &x,
                           const std::vector<double> &dy, const HostExperts &w,
                           const std::vector<int64_t> &splits, int64_t H,
                           int64_t I) {
  int64_t T = std::accumulate(splits.begin(), splits.end(), int64_t(0));
  size_t E = splits.size();
  Reference all;
  for (auto *v : {&all.y, &all.yTerms, &all.grads.dx, &all.terms.dx})
    v->assign(T * H, 0.0);
  for (auto *v : {&all.grads.gate, &all.grads.up, &all.grads.down,
                  &all.terms.gate, &all.terms.up, &all.terms.down})
    v->assign(E * I * H, 0.0);
  int64_t first = 0;
  for (size_t e = 0; e < E; ++e) {
    int64_t rows = splits[e];
    Reference r =
        reference(hostRows(x, first, rows, H), w.gate[e], w.up[e], w.down[e],
                  hostRows(dy, first, rows, H), rows, H, I);
    size_t at = first * H, weights = e * I * H;
    place(all.y, r.y, at);
    place(all.yTerms, r.yTerms, at);
    place(all.grads.dx, r.grads.dx, at);
    place(all.terms.dx, r.terms.dx, at);
    place(all.grads.gate, r.grads.gate, weights);
    place(all.grads.up, r.grads.up, weights);
    place(all.grads.down, r.grads.down, weights);
    place(all.terms.gate, r.terms.gate, weights);
    place(all.terms.up, r.terms.up, weights);
    place(all.terms.down, r.terms.down, weights);
    first += rows;
  }
  return all;
}

/// One problem's device tensors and their views.
struct Problem {
  int64_t T = 0, H = 0, I = 0;
  size_t E = 0;
  bool fused = false;
  Tensor x, dy, dy2, gate, up, down; // gate: [E, 2I, H] when fused
  Tensor y, dx, gradGate, gradUp, gradDown;
  /// The untiled step's own gradients, in the weights' dtype (not f32).
  Tensor ownGate, ownUp, ownDown;
  ops::GroupedMLPWeights weights;
  ops::GroupedMLPGradients grads, ownGrads;
  HostExperts host;

  Problem(Suite &suite, DType dtype, const std::vector<int64_t> &splits,
          int64_t H, int64_t I)
      : H(H), I(I), E(splits.size()), fused(I == 300 || I == 384) {
    T = std::accumulate(splits.begin(), splits.end(), int64_t(0));
    int64_t e = static_cast<int64_t>(E);
    double wh = 1.0 / std::sqrt(double(H)), wi = 1.0 / std::sqrt(double(I));
    x = suite.make({T, H}, dtype, true, -1.0, 1.0);
    dy = suite.make({T, H}, dtype, true, -1.0, 1.0);
    dy2 = suite.make({T, H}, dtype, true, -1.0, 1.0);
    gate = suite.make({e, fused ? 2 * I : I, H}, dtype, true, -wh, wh);
    up = suite.make({e, I, H}, dtype, true, -wh, wh);
    down = suite.make({e, H, I}, dtype, true, -wi, wi);
    y = suite.make({T, H}, dtype, false);
    dx = suite.make({T, H}, dtype, false);
    gradGate = suite.make({e, fused ? 2 * I : I, H}, DType::F32, false);
    gradUp = suite.make({e, I, H}, DType::F32, false);
    gradDown = suite.make({e, H, I}, DType::F32, false);
    ownGate = suite.make({e, fused ? 2 * I : I, H}, dtype, false);
    ownUp = suite.make({e, I, H}, dtype, false);
    ownDown = suite.make({e, H, I}, dtype, false);
    weights =
        fused ? *ops::GroupedMLPWeights::fusedStacked(gate.view, down.view)
              : *ops::GroupedMLPWeights::stacked(gate.view, up.view, down.view);
    grads = fused ? *ops::GroupedMLPGradients::fusedStacked(gradGate.view,
                                                            gradDown.view)
                  : *ops::GroupedMLPGradients::stacked(
                        gradGate.view, gradUp.view, gradDown.view);
    ownGrads = fused ? *ops::GroupedMLPGradients::fusedStacked(ownGate.view,
                                                               ownDown.view)
                     : *ops::GroupedMLPGradients::stacked(
                           ownGate.view, ownUp.view, ownDown.view);
    size_t block = I * H, gateBlock = fused ? 2 * block : block;
    for (size_t k = 0; k < E; ++k) {
      auto at = gate.host.begin() + k * gateBlock;
      host.gate.emplace_back(at, at + block);
      host.up.emplace_back(fused ? at + block : up.host.begin() + k * block,
                           fused ? at + 2 * block
                                 : up.host.begin() + (k + 1) * block);
      host.down.emplace_back(down.host.begin() + k * block,
                             down.host.begin() + (k + 1) * block);
    }
  }

  void poison() {
    for (Tensor *t :
         {&y, &dx, &gradGate, &gradUp, &gradDown, &ownGate, &ownUp, &ownDown})
      (void)t->buffer.fill(0xFF);
  }

  /// dx and the stacked main_grad (or the own-dtype gradients) as the GPU
  /// left them.
  Gradients read(Suite &suite, bool own = false) const {
    Gradients got;
    got.dx = suite.read(dx);
    got.down = suite.read(own ? ownDown : gradDown);
    if (!fused) {
      got.gate = suite.read(own ? ownGate : gradGate);
      got.up = suite.read(own ? ownUp : gradUp);
      return got;
    }
    std::vector<double> both = suite.read(own ? ownGate : gradGate);
    size_t block = I * H;
    for (size_t k = 0; k < E; ++k) {
      auto at = both.begin() + 2 * k * block;
      got.gate.insert(got.gate.end(), at, at + block);
      got.up.insert(got.up.end(), at + block, at + 2 * block);
    }
    return got;
  }
};

void expectGradients(Suite &suite, const std::string &what,
                     const Gradients &got, const Gradients &want,
                     const Gradients &terms, DType dtype) {
  expectClose(suite, what + " dx", got.dx, want.dx, terms.dx, dtype);
  // main_grad is f32, but its terms come from the dtype's rounded dg, du
  // and h: the dtype's tolerance.
  expectClose(suite, what + " main_grad gate", got.gate, want.gate, terms.gate,
              dtype);
  expectClose(suite, what + " main_grad up", got.up, want.up, terms.up, dtype);
  expectClose(suite, what + " main_grad down", got.down, want.down, terms.down,
              dtype);
}

std::string describeSplits(const std::vector<int64_t> &splits) {
  std::string text;
  for (int64_t s : splits)
    text += (text.empty() ? "" : ",") + std::to_string(s);
  return "[" + text + "]";
}

void testGroupedShape(Suite &suite, DType dtype,
                      const std::vector<int64_t> &splits, int64_t H,
                      int64_t I) {
  std::string at = std::string(rt::name(dtype)) +
                   " splits=" + describeSplits(splits) +
                   " H=" + std::to_string(H) + " I=" + std::to_string(I);
  Problem p(suite, dtype, splits, H, I);
  Reference ref = groupedReference(p.x.host, p.dy.host, p.host, splits, H, I);
  Reference ref2 = groupedReference(p.x.host, p.dy2.host, p.host, splits, H, I);

  // The same counts on the device (int64), for the grouped GEMM to read
  // there (or, off compute capability 9.0 / bf16 / multiples of 8, to be
  // copied to the host).
  Tensor counts =
      suite.make({static_cast<int64_t>(splits.size())}, DType::I64, false);
  {
    std::vector<double> values(splits.begin(), splits.end());
    std::vector<unsigned char> bytes = rt::encode(DType::I64, values);
    (void)counts.buffer.copyFromHost(bytes.data(), bytes.size());
  }
  ops::ExpertSplits onDevice = ops::ExpertSplits::onDevice(counts.view);

  ops::MLPOptions one, oneStream, three, untiled;
  one.shards = oneStream.shards = 1;
  oneStream.streams = 1;
  three.shards = 3;
  untiled.recompute = false;
  // What the default (the experts' GEMMs on several streams) gave: one
  // stream must give the same bits, the fork orders nothing it should not.
  std::vector<double> forkedY;
  Gradients forked;
  for (auto [name, options, device] :
       {std::tuple{"1 shard", one, false},
        {"1 shard 1 stream", oneStream, false},
        {"3 shards", three, false},
        {"untiled", untiled, false},
        {"device splits 3 shards", three, true},
        {"device splits untiled", untiled, true}}) {
    const ops::ExpertSplits &given =
        device ? onDevice : ops::ExpertSplits(splits);
    std::string what = std::string("grouped mlp ") + name + " " + at;
    auto mlp = ops::GroupedSwiGLUMLP::create(suite.ops, options);
    if (!mlp) {
      suite.report(what + " create", false, mlp.message());
      return;
    }
    p.poison();
    suite.check(what + " forward",
                (*mlp)->forward(p.weights, p.x.view, given, p.y.view));
    // Overwrite into NaN-poisoned main_grad: every expert's is replaced,
    // zeroed where the expert has no tokens.
    suite.check(what + " backward",
                (*mlp)->backward(p.weights, p.x.view, given, p.dy.view,
                                 p.dx.view, p.grads, true));
    suite.check(what + " sync", rt::synchronize(suite.ops.device()));
    std::vector<double> y = suite.read(p.y);
    Gradients got = p.read(suite);
    expectClose(suite, what + " y", y, ref.y, ref.yTerms, dtype);
    expectGradients(suite, what, got, ref.grads, ref.terms, dtype);
    if (std::string(name) == "1 shard") {
      forkedY = y;
      forked = got;
    }
    if (std::string(name) == "1 shard 1 stream")
      suite.report(what + " bitwise equal to several streams",
                   y == forkedY && got.dx == forked.dx &&
                       got.gate == forked.gate && got.up == forked.up &&
                       got.down == forked.down,
                   "one stream and several gave different bits");
    if (!options.recompute && dtype != DType::F32) {
      // The autograd step's own gradients, in the weights' dtype: written
      // once from the fp32 accumulator (the grouped GEMM's bf16 form, or
      // cuBLASLt's), every expert's replaced or zeroed.
      p.poison();
      suite.check(what + " forward again",
                  (*mlp)->forward(p.weights, p.x.view, given, p.y.view));
      suite.check(what + " backward into " + rt::name(dtype) + " gradients",
                  (*mlp)->backward(p.weights, p.x.view, given, p.dy.view,
                                   p.dx.view, p.ownGrads, true));
      suite.check(what + " own-dtype sync",
                  rt::synchronize(suite.ops.device()));
      expectGradients(suite, what + " " + rt::name(dtype) + " gradients",
                      p.read(suite, true), ref.grads, ref.terms, dtype);
      // The same backward in two parts, x's rows given only to the second,
      // in the buffer its dx overwrites, g and u alone kept in the caller's
      // workspace and the rest in a scratch apart, NaN before each call: h
      // is made again (as tile.ops.moe_experts calls it).
      p.poison();
      Tensor xThenDx = suite.copy(p.x);
      std::swap(p.dx, xThenDx);
      using Part = ops::GroupedSwiGLUMLP::Part;
      auto plan = ops::planShards(p.T, I, dtype, options,
                                  static_cast<int64_t>(splits.size()));
      size_t block = plan->layout.bufferBytes(plan->rowsPerShard);
      auto keptBuffer = rt::DeviceBuffer::allocate(
          suite.ops.device(), plan->layout.keptBuffers * block);
      auto scratch = rt::DeviceBuffer::allocate(
          suite.ops.device(),
          plan->layout.fixedBytes +
              (plan->layout.buffers - plan->layout.keptBuffers) * block);
      if (!keptBuffer || !scratch) {
        suite.report(what + " workspace apart", false, "allocation failed");
        return;
      }
      ops::RunOptions apart;
      apart.workspace = keptBuffer->data();
      apart.workspaceBytes = keptBuffer->size();
      apart.callerWorkspace = true;
      apart.scratch = scratch->data();
      apart.scratchBytes = scratch->size();
      (void)scratch->fill(0xFF);
      suite.check(what + " forward before two parts",
                  (*mlp)->forward(p.weights, p.x.view, given, p.y.view, apart));
      (void)scratch->fill(0xFF);
      suite.check(what + " backward down part",
                  (*mlp)->backward(p.weights, {}, given, p.dy.view, {}, p.grads,
                                   true, apart, {}, {}, Part::Down));
      (void)scratch->fill(0xFF);
      suite.check(what + " backward gate/up part, dx over x",
                  (*mlp)->backward(p.weights, p.dx.view, given, {}, p.dx.view,
                                   p.grads, true, apart, {}, {}, Part::GateUp));
      suite.check(what + " two parts sync",
                  rt::synchronize(suite.ops.device()));
      expectGradients(suite, what + " in two parts", p.read(suite), ref.grads,
                      ref.terms, dtype);
      std::swap(p.dx, xThenDx);
    }
    if (options.shards != 3)
      continue;
    // Then + g2 (three shards; an expert without tokens keeps g1's zero).
    suite.check(what + " accumulate",
                (*mlp)->backward(p.weights, p.x.view, given, p.dy2.view,
                                 p.dx.view, p.grads, false));
    suite.check(what + " accumulate sync", rt::synchronize(suite.ops.device()));
    Gradients sum = plus(ref.grads, ref2.grads),
              terms = plus(ref.terms, ref2.terms);
    sum.dx = ref2.grads.dx;
    terms.dx = ref2.terms.dx;
    expectGradients(suite, what + " g1 + g2", p.read(suite), sum, terms, dtype);
  }
}

/// Bad splits and shapes are refused, with what is wrong.
void testGroupedErrors(Suite &suite) {
  std::vector<int64_t> splits = {3, 0, 2};
  Problem p(suite, DType::BF16, splits, 64, 128);
  auto mlp = ops::GroupedSwiGLUMLP::create(suite.ops);
  if (!mlp) {
    suite.report("grouped mlp create", false, mlp.message());
    return;
  }
  auto refuses = [&](const std::string &name, const rt::Status &status,
                     const std::string &message) {
    suite.report("grouped mlp refuses " + name,
                 !status && status.message() == message, status.message());
  };
  refuses("splits short of T",
          (*mlp)->forward(p.weights, p.x.view, {3, 0, 1}, p.y.view),
          "the splits add up to 4 but x has 5 rows");
  refuses("splits beyond T",
          (*mlp)->forward(p.weights, p.x.view, {3, 0, 3}, p.y.view),
          "the splits add up to more than the 5 rows of x (at split 2)");
  refuses("a negative split",
          (*mlp)->forward(p.weights, p.x.view, {3, -1, 3}, p.y.view),
          "split 1 is -1; a split counts tokens, ≥ 0");
  refuses("a split per expert",
          (*mlp)->forward(p.weights, p.x.view, {3, 2}, p.y.view),
          "the grouped MLP has 3 experts but 2 splits");
  Tensor other = suite.make({2, 64, 128}, DType::BF16, true);
  refuses("stacks of different E",
          ops::GroupedMLPWeights::stacked(p.gate.view, p.up.view, other.view)
              .takeStatus(),
          "the stacked down weight has 2 experts, not 3 as the others");
  // Expert 1 consistent in itself, with I = 100 against the others' 128.
  Tensor narrow = suite.make({100, 64}, DType::BF16, true);
  Tensor narrowDown = suite.make({64, 100}, DType::BF16, true);
  ops::GroupedMLPWeights mixed = p.weights;
  mixed.experts[1] = {narrow.view, narrow.view, narrowDown.view};
  refuses("experts of different I",
          (*mlp)->forward(mixed, p.x.view, splits, p.y.view),
          "expert 1 has intermediate size 100 but expert 0 has 128; every "
          "expert has one shape");
  // The untiled step's backward runs on the g, u, h its forward kept: a
  // forward of other rows in the same workspace since is refused.
  ops::MLPOptions untiled;
  untiled.recompute = false;
  auto keeping = ops::GroupedSwiGLUMLP::create(suite.ops, untiled);
  if (keeping) {
    // Other rows of another count: the workspace is the same either way
    // (the operator's own), so only the count tells the forwards apart.
    Tensor other = suite.make({6, 64}, DType::BF16, true),
           otherY = suite.make({6, 64}, DType::BF16, false);
    suite.check("grouped mlp untiled forward",
                (*keeping)->forward(p.weights, p.x.view, splits, p.y.view));
    suite.check(
        "grouped mlp untiled forward of other rows",
        (*keeping)->forward(p.weights, other.view, {2, 2, 2}, otherY.view));
    refuses("an untiled backward whose g, u, h were overwritten",
            (*keeping)->backward(p.weights, p.x.view, splits, p.dy.view,
                                 p.dx.view, p.grads, true),
            "the untiled backward (recompute = false) needs the forward of "
            "the same x, with the same workspace, first: it keeps g, u and "
            "h");
    // A forward with routing weights keeps h scaled by them: a backward
    // without them would be off by them, and is refused.
    Tensor routing = suite.make({5}, DType::F32, true, 0.0, 1.0);
    suite.check("grouped mlp untiled routed forward",
                (*keeping)->forward(p.weights, p.x.view, splits, p.y.view, {},
                                    routing.view));
    refuses("an untiled backward without its forward's routing weights",
            (*keeping)->backward(p.weights, p.x.view, splits, p.dy.view,
                                 p.dx.view, p.grads, true),
            "the untiled backward (recompute = false) takes routing weights "
            "exactly where its forward did: the kept h is scaled by them");
  }
  // The backward in two parts is the untiled step's, down part first,
  // once per forward.
  using Part = ops::GroupedSwiGLUMLP::Part;
  refuses("a tiled backward in two parts",
          (*mlp)->backward(p.weights, {}, splits, p.dy.view, {}, p.grads, true,
                           {}, {}, {}, Part::Down),
          "the backward in two parts is the untiled step's (recompute = "
          "false): the tiled step reads x and dy together, shard by shard");
  if (keeping) {
    suite.check("grouped mlp untiled forward before its parts",
                (*keeping)->forward(p.weights, p.x.view, splits, p.y.view));
    refuses("a gate/up part before the down part",
            (*keeping)->backward(p.weights, p.x.view, splits, {}, p.dx.view,
                                 p.grads, true, {}, {}, {}, Part::GateUp),
            "the gate/up part of the untiled backward needs its down part "
            "first, on the same forward");
    suite.check("grouped mlp untiled down part",
                (*keeping)->backward(p.weights, {}, splits, p.dy.view, {},
                                     p.grads, true, {}, {}, {}, Part::Down));
    refuses("a second down part",
            (*keeping)->backward(p.weights, {}, splits, p.dy.view, {}, p.grads,
                                 true, {}, {}, {}, Part::Down),
            "the down part of this forward's backward already ran: g, u and "
            "h hold its gradients now; the gate/up part comes next");
    ops::RunOptions withScratch;
    Tensor scratch = suite.make({64 << 20}, DType::BF16, false);
    withScratch.scratch = scratch.view.data;
    withScratch.scratchBytes = 128 << 20;
    refuses("a scratch apart without a caller's workspace",
            (*keeping)->backward(p.weights, p.x.view, splits, {}, p.dx.view,
                                 p.grads, true, withScratch, {}, {},
                                 Part::GateUp),
            "a scratch apart from the workspace is for the untiled step "
            "(recompute = false) with a caller's workspace, which it keeps g "
            "and u in");
    refuses("a whole backward after the down part",
            (*keeping)->backward(p.weights, p.x.view, splits, p.dy.view,
                                 p.dx.view, p.grads, true),
            "the down part of this forward's backward already ran: g, u and "
            "h hold its gradients now; the gate/up part comes next");
  }
  // main_grad is f32, or in the weights' dtype for the untiled step's
  // overwrite alone (nothing is ever added to bf16).
  Tensor half = suite.make({3, 128, 64}, DType::F16, false);
  auto f16Grads =
      ops::GroupedMLPGradients::stacked(half.view, half.view, p.gradDown.view);
  refuses("an f16 main_grad for bf16 weights",
          (*mlp)->backward(p.weights, p.x.view, splits, p.dy.view, p.dx.view,
                           *f16Grads, true),
          "expert 0: main_grad of the gate weight has dtype f16, expected "
          "f32");
  auto mixedGrads = ops::GroupedMLPGradients::stacked(
      p.ownGate.view, p.ownUp.view, p.gradDown.view);
  refuses("a main_grad of two dtypes",
          (*mlp)->backward(p.weights, p.x.view, splits, p.dy.view, p.dx.view,
                           *mixedGrads, true),
          "expert 0: main_grad of the down weight has dtype f32, expected "
          "bf16");
  refuses("a bf16 main_grad of the tiled step",
          (*mlp)->backward(p.weights, p.x.view, splits, p.dy.view, p.dx.view,
                           p.ownGrads, true),
          "main_grad in bf16 is written only by an overwrite call of the "
          "untiled step (recompute = false): a sum over shards or "
          "micro-batches needs f32 main_grad");
  if (keeping) {
    suite.check("grouped mlp untiled forward before adding to bf16",
                (*keeping)->forward(p.weights, p.x.view, splits, p.y.view));
    refuses("adding to a bf16 main_grad",
            (*keeping)->backward(p.weights, p.x.view, splits, p.dy.view,
                                 p.dx.view, p.ownGrads, false),
            "main_grad in bf16 is written only by an overwrite call of the "
            "untiled step (recompute = false): a sum over shards or "
            "micro-batches needs f32 main_grad");
  }
}

} // namespace

void testGroupedMLP(Suite &suite, bool quick, bool small) {
  using Splits = std::vector<int64_t>;
  if (small) {
    testGroupedShape(suite, DType::BF16, {5, 0, 12}, 64, 128);
  } else {
    std::vector<Splits> groups = {{7}, {5, 0, 12}, {0, 3, 17, 0, 1, 9, 0, 6}};
    if (!quick)
      groups.push_back({0, 130, 70, 0, 1, 290, 0, 509});
    for (DType dtype : {DType::BF16, DType::F32})
      for (const Splits &splits : groups)
        for (int64_t H : {64, 100})
          for (int64_t I : {128, 300})
            testGroupedShape(suite, dtype, splits, H, I);
    testGroupedShape(suite, DType::F16, {5, 0, 12}, 100, 300);
    // The grouped GEMM's tiles (128 × 256 × 64) several times over, with
    // partial ones, and 128 experts, many without tokens.
    testGroupedShape(suite, DType::BF16, {0, 130, 70, 0, 1, 290, 0, 509}, 256,
                     384);
    if (!quick) {
      Splits many(128, 0);
      std::mt19937 rng(11);
      for (int64_t &count : many)
        count = rng() % 3 == 0 ? 0 : static_cast<int64_t>(rng() % 40);
      testGroupedShape(suite, DType::BF16, many, 64, 128);
    }
  }
  testGroupedErrors(suite);
}

} // namespace tile::gputests
