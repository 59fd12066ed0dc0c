//===- FiniteDifferences.cpp - numerical gradients via the evaluator -----===//

#include "tile/Interp/FiniteDifferences.h"

#include <cmath>
#include <limits>

namespace tile::interp {

namespace {
struct Weighted {
  /// g(t) = Σ dy·f(x + t·v).
  double value = 0.0;
  /// Σ |dy·f(x + t·v)|: the scale of g's rounding error.
  double magnitude = 0.0;
};

/// g(t) = Σ over results of dy · f(x + t·v), evaluated in exact float64.
llvm::Expected<Weighted> weightedOutput(mlir::func::FuncOp func,
                                        const std::vector<Buffer> &args,
                                        const std::vector<Buffer> &cotangents,
                                        const std::vector<Buffer> &direction,
                                        double t, int64_t maxElementOps) {
  std::vector<Buffer> moved = args;
  for (size_t i = 0; i < moved.size(); ++i)
    for (size_t j = 0; j < moved[i].values.size(); ++j)
      moved[i].values[j] += t * direction[i].values[j];
  EvalOptions exact;
  exact.roundStorage = false;
  // The caller bounds the whole check's work (checkGradients) and gives
  // each evaluation its share, which a contraction checks where it runs.
  exact.maxElementOps = maxElementOps;
  auto results = evaluate(func, moved, exact);
  if (!results)
    return results.takeError();
  if (results->size() != cotangents.size())
    return errorAt(func.getLoc(), "@" + func.getSymName() + " has " +
                                      llvm::Twine(results->size()) +
                                      " results but " +
                                      llvm::Twine(cotangents.size()) +
                                      " cotangents were given");
  Weighted total;
  for (size_t r = 0; r < results->size(); ++r) {
    const Buffer &out = (*results)[r];
    if (out.values.size() != cotangents[r].values.size())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "cotangent #" + llvm::Twine(r) + " has " +
              llvm::Twine(cotangents[r].values.size()) +
              " elements but the result has " + llvm::Twine(out.values.size()));
    for (size_t j = 0; j < out.values.size(); ++j) {
      double term = cotangents[r].values[j] * out.values[j];
      total.value += term;
      total.magnitude += std::fabs(term);
    }
  }
  return total;
}

llvm::Error checkDirection(const std::vector<Buffer> &args,
                           const std::vector<Buffer> &direction) {
  if (direction.size() != args.size())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the direction has " + llvm::Twine(direction.size()) + " parts for " +
            llvm::Twine(args.size()) + " arguments");
  for (size_t i = 0; i < args.size(); ++i)
    if (direction[i].values.size() != args[i].values.size())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "direction part #" + llvm::Twine(i) + " has " +
              llvm::Twine(direction[i].values.size()) + " elements, argument " +
              "has " + llvm::Twine(args[i].values.size()));
  return llvm::Error::success();
}
} // namespace

llvm::Expected<double>
directionalDerivative(mlir::func::FuncOp func, const std::vector<Buffer> &args,
                      const std::vector<Buffer> &cotangents,
                      const std::vector<Buffer> &direction,
                      const FiniteDifferenceOptions &options) {
  if (llvm::Error error = checkDirection(args, direction))
    return std::move(error);
  double scale = 1.0, extent = 0.0;
  for (size_t i = 0; i < args.size(); ++i)
    for (size_t j = 0; j < args[i].values.size(); ++j) {
      if (direction[i].values[j] == 0.0)
        continue;
      scale = std::max(scale, std::fabs(args[i].values[j]));
      extent = std::max(extent, std::fabs(direction[i].values[j]));
    }
  if (extent == 0.0)
    return 0.0;
  // One fourth-order estimate D(h) per step of a ladder h, 4h, 16h, ...:
  // small steps suffer from rounding (≈ ε·Σ|dy·f| / h), large ones from
  // truncation. |D(h) − D(4h)| bounds the truncation of D(h) generously
  // for smooth functions (by 255×) and is the only safe bound near a kink
  // (max, select, abs), where D(4h) may straddle it and D(h) not. Take the
  // step whose estimated total error is smallest: a flat function (RMSNorm
  // at width 1) gets a large step, a steep or kinked one a small step.
  double h0 = options.relativeStep * scale / extent;
  std::vector<double> estimates, rounding;
  for (unsigned rung = 0; rung < options.steps; ++rung) {
    double h = h0 * std::pow(4.0, rung);
    double g[4], magnitude = 0.0;
    const double steps[4] = {-2 * h, -h, h, 2 * h};
    for (int k = 0; k < 4; ++k) {
      auto value = weightedOutput(func, args, cotangents, direction, steps[k],
                                  options.maxElementOps);
      if (!value)
        return value.takeError();
      g[k] = value->value;
      magnitude = std::max(magnitude, value->magnitude);
    }
    estimates.push_back((8.0 * (g[2] - g[1]) - (g[3] - g[0])) / (12.0 * h));
    // 18 roundings of size ε·magnitude, divided by 12h.
    rounding.push_back(1.5 * 0x1p-52 * magnitude / h);
  }
  size_t best = 0;
  double bestError = INFINITY;
  for (size_t rung = 0; rung + 1 < estimates.size(); ++rung) {
    double truncation = std::fabs(estimates[rung] - estimates[rung + 1]);
    double error = rounding[rung] + truncation;
    if (error < bestError) {
      bestError = error;
      best = rung;
    }
  }
  return estimates[best];
}

llvm::Expected<Buffer>
finiteDifferenceVJP(mlir::func::FuncOp func, const std::vector<Buffer> &args,
                    const std::vector<Buffer> &cotangents, unsigned argIndex,
                    const FiniteDifferenceOptions &options) {
  if (argIndex >= args.size())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "argument #" + llvm::Twine(argIndex) +
                                       " does not exist");
  Buffer gradient = args[argIndex];
  std::vector<Buffer> direction;
  for (const Buffer &arg : args) {
    Buffer zero = arg;
    std::fill(zero.values.begin(), zero.values.end(), 0.0);
    direction.push_back(std::move(zero));
  }
  for (size_t j = 0; j < gradient.values.size(); ++j) {
    direction[argIndex].values[j] = 1.0;
    auto derivative =
        directionalDerivative(func, args, cotangents, direction, options);
    if (!derivative)
      return derivative.takeError();
    gradient.values[j] = *derivative;
    direction[argIndex].values[j] = 0.0;
  }
  return gradient;
}

} // namespace tile::interp
