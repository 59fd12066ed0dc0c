//===- GradientCheck.cpp - derived gradients vs finite differences -------===//

#include "tile/Interp/GradientCheck.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Interp/Inputs.h"

#include <cmath>
#include <limits>
#include <map>

using namespace mlir;
using mlir::tile::TileDialect;

namespace tile::interp {

namespace {
/// An error about argument `index` of `backward`, at that argument.
llvm::Error argumentError(func::FuncOp backward, unsigned index,
                          const llvm::Twine &message) {
  Location loc = backward.isExternal() ? backward.getLoc()
                                       : backward.getArgument(index).getLoc();
  return errorAt(loc, "backward argument #" + llvm::Twine(index) + " of @" +
                          backward.getSymName() + " " + message);
}

std::optional<int64_t> roleOf(DictionaryAttr attrs, StringRef role) {
  if (!attrs)
    return std::nullopt;
  if (auto index = dyn_cast_or_null<IntegerAttr>(attrs.get(role)))
    return index.getInt();
  return std::nullopt;
}

Buffer randomLike(const Buffer &shape, Random &random) {
  Buffer buffer = Buffer::tensor(shape.shape, StorageType::F64);
  for (double &value : buffer.values)
    value = random.uniform(-1.0, 1.0);
  return buffer;
}

/// Exact float64 within `share` element operations. checkGradients bounds
/// the work of all its evaluations at once from the forward's estimate and
/// gives each evaluation of the forward its share, which a contraction over
/// operands the kernel made (larger than any argument) checks where it
/// runs; the backward's (once) is not bounded apart.
EvalOptions exactly(int64_t share = std::numeric_limits<int64_t>::max()) {
  EvalOptions options;
  options.roundStorage = false;
  options.maxElementOps = share;
  return options;
}

/// The backward's arguments, bound by role: the primal inputs `args`, the
/// forward's `outputs` it reads, the `cotangents` of those outputs, the
/// `saved` values, and fresh random main_grad accumulators (kept in
/// `mainGrads`, by argument).
llvm::Expected<std::vector<Buffer>>
bindBackwardArguments(func::FuncOp backward, const std::vector<Buffer> &args,
                      const std::vector<Buffer> &outputs,
                      const std::vector<Buffer> &cotangents,
                      const std::vector<Buffer> &saved, Random &random,
                      std::map<int64_t, Buffer> &mainGrads) {
  std::vector<Buffer> backwardArgs;
  for (unsigned index = 0; index < backward.getNumArguments(); ++index) {
    DictionaryAttr attrs = backward.getArgAttrDict(index);
    if (auto r = roleOf(attrs, TileDialect::getCotangentAttrName())) {
      if (*r >= static_cast<int64_t>(cotangents.size()))
        return argumentError(backward, index,
                             "is the cotangent of a result that does not "
                             "exist");
      backwardArgs.push_back(cotangents[*r]);
    } else if (auto k = roleOf(attrs, TileDialect::getSavedAttrName())) {
      if (*k >= static_cast<int64_t>(saved.size()))
        return argumentError(backward, index,
                             "is saved value #" + llvm::Twine(*k) +
                                 ", which no forward variant returns");
      backwardArgs.push_back(saved[*k]);
    } else if (auto r =
                   roleOf(attrs, TileDialect::getForwardResultAttrName())) {
      if (*r >= static_cast<int64_t>(outputs.size()))
        return argumentError(backward, index,
                             "reads forward result #" + llvm::Twine(*r) +
                                 ", which the forward does not return");
      backwardArgs.push_back(outputs[*r]);
    } else if (auto i = roleOf(attrs, TileDialect::getMainGradAttrName())) {
      if (*i >= static_cast<int64_t>(args.size()))
        return argumentError(backward, index,
                             "accumulates the gradient of a missing "
                             "argument");
      mainGrads[*i] = randomLike(args[*i], random);
      backwardArgs.push_back(mainGrads[*i]);
    } else {
      if (index >= args.size())
        return argumentError(backward, index,
                             "has no role and is no primal argument");
      backwardArgs.push_back(args[index]);
    }
  }
  return backwardArgs;
}
} // namespace

llvm::Expected<std::vector<ArgumentGradientError>>
checkGradients(func::FuncOp forward, func::FuncOp backward,
               func::FuncOp forwardWithSaved, const std::vector<Buffer> &args,
               const GradientCheckOptions &options) {
  // Refused before it starts when it would take too long: the forward, the
  // forward with its saved values and the backward once each, the forward
  // four times per finite-difference step, direction and argument.
  // Counted in double: directions and steps are the caller's and could
  // overflow a product of integers.
  double evaluations = 3;
  for (unsigned arg = 0; arg < forward.getNumArguments(); ++arg)
    if (mlir::tile::isDifferentiableArgument(forward, arg))
      evaluations += 4.0 * options.directions * options.finiteDifferences.steps;
  int64_t each = estimateElementOps(forward, args);
  if (double(each) * evaluations > double(options.maxElementOps))
    return errorAt(forward.getLoc(),
                   "the gradient check of @" + forward.getSymName() +
                       " at these shapes takes " +
                       llvm::Twine(static_cast<uint64_t>(evaluations)) +
                       " evaluations of about " + llvm::Twine(each) +
                       " element operations each, over its limit of " +
                       llvm::Twine(options.maxElementOps) +
                       " in all; check smaller shapes (--rows, --widths) or "
                       "raise tile-run --max-element-ops");
  int64_t share = std::max<int64_t>(
      1, static_cast<int64_t>(double(options.maxElementOps) / evaluations));
  FiniteDifferenceOptions differences = options.finiteDifferences;
  differences.maxElementOps = share;
  Random random(options.seed ^ 0x9e3779b97f4a7c15ULL);
  auto outputs = evaluate(forward, args, exactly(share));
  if (!outputs)
    return outputs.takeError();
  std::vector<Buffer> cotangents;
  for (const Buffer &output : *outputs)
    cotangents.push_back(randomLike(output, random));

  std::vector<Buffer> saved;
  if (forwardWithSaved) {
    auto all = evaluate(forwardWithSaved, args, exactly());
    if (!all)
      return all.takeError();
    for (unsigned index = 0; index < all->size(); ++index)
      if (roleOf(forwardWithSaved.getResultAttrDict(index),
                 TileDialect::getSavedAttrName()))
        saved.push_back((*all)[index]);
  }

  std::map<int64_t, Buffer> mainGrads;
  auto backwardArgs = bindBackwardArguments(
      backward, args, *outputs, cotangents, saved, random, mainGrads);
  if (!backwardArgs)
    return backwardArgs.takeError();
  auto results = evaluate(backward, *backwardArgs, exactly());
  if (!results)
    return results.takeError();
  std::map<int64_t, Buffer> gradients;
  for (unsigned index = 0; index < results->size(); ++index) {
    // A recomputed forward result (return-primal) is no gradient; the GPU
    // suite compares it with the forward kernel's.
    if (roleOf(backward.getResultAttrDict(index),
               TileDialect::getPrimalAttrName()))
      continue;
    auto i = roleOf(backward.getResultAttrDict(index),
                    TileDialect::getGradientAttrName());
    if (!i)
      return errorAt(backward.getLoc(),
                     "backward result #" + llvm::Twine(index) + " of @" +
                         backward.getSymName() + " has no tile.gradient role");
    Buffer gradient = (*results)[index];
    // With a main_grad the result is main_grad + gradient.
    if (auto acc = mainGrads.find(*i); acc != mainGrads.end())
      for (size_t j = 0; j < gradient.values.size(); ++j)
        gradient.values[j] -= acc->second.values[j];
    gradients[*i] = std::move(gradient);
  }

  std::vector<ArgumentGradientError> report;
  for (unsigned arg = 0; arg < forward.getNumArguments(); ++arg) {
    if (!mlir::tile::isDifferentiableArgument(forward, arg))
      continue;
    auto found = gradients.find(arg);
    if (found == gradients.end())
      return errorAt(backward.getLoc(),
                     "@" + backward.getSymName() +
                         " returns no gradient for argument #" +
                         llvm::Twine(arg));
    const Buffer &gradient = found->second;
    if (gradient.values.size() != args[arg].values.size())
      return errorAt(backward.getLoc(),
                     "the gradient of argument #" + llvm::Twine(arg) + " has " +
                         llvm::Twine(gradient.values.size()) +
                         " elements, the argument " +
                         llvm::Twine(args[arg].values.size()));
    ArgumentGradientError entry;
    entry.argument = arg;
    std::vector<Buffer> direction;
    for (const Buffer &a : args)
      direction.push_back(Buffer::tensor(a.shape, StorageType::F64));
    for (unsigned d = 0; d < options.directions; ++d) {
      direction[arg] = randomLike(args[arg], random);
      direction[arg].isTensor = args[arg].isTensor;
      auto numerical = directionalDerivative(forward, args, cotangents,
                                             direction, differences);
      if (!numerical)
        return numerical.takeError();
      double derived = 0.0, terms = 0.0;
      for (size_t j = 0; j < gradient.values.size(); ++j) {
        double term = gradient.values[j] * direction[arg].values[j];
        derived += term;
        terms += std::fabs(term);
      }
      double scale = std::max(terms, std::fabs(*numerical));
      double error =
          scale == 0.0 ? 0.0 : std::fabs(derived - *numerical) / scale;
      if (std::isnan(error))
        error = INFINITY;
      if (d == 0 || error > entry.maxRelativeError) {
        entry.maxRelativeError = error;
        entry.derived = derived;
        entry.numerical = *numerical;
      }
    }
    report.push_back(entry);
  }
  return report;
}

} // namespace tile::interp
