//===- Differentiate.cpp - reverse-mode differentiation of a kernel ------===//
//
// Builds `@f_bwd` in four steps:
//
//  1. Recompute: clone the forward body into the backward, so every primal
//     value the derivative rules read is available there.
//  2. Activity: a value is active if it depends on a differentiable argument
//     and some result depends on it; only active values get cotangents. A
//     row maximum the results are invariant to (a softmax's) is constant.
//  3. Reverse sweep: walk the recomputed ops backwards and call each op's
//     rule (DifferentiableOpInterface), summing contributions per value.
//  4. Boundary: convert each argument's f32 cotangent to its type (or
//     accumulate it into a main_grad argument), read the forward results
//     whose recomputation alone reads an input (a residual add's sum), let the
//     policy replace recomputed values with saved ones, and delete what
//     nothing uses.
//
// Nothing here knows a kernel by name: all knowledge of ops is in the rules.
//
//===----------------------------------------------------------------------===//

#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "InvariantRowStatistics.h"
#include "QuotientResults.h"
#include "RecomputePolicy.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::tile;

namespace {
/// The roles tile-differentiate gives a derived function's arguments; a
/// function derived from a derived one gives them anew.
constexpr StringLiteral kArgumentRoles[] = {
    TileDialect::getCotangentAttrName(), TileDialect::getSavedAttrName(),
    TileDialect::getMainGradAttrName(),
    TileDialect::getForwardResultAttrName()};
} // namespace

namespace {

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// A cross-row sum that a main_grad can absorb: `sum ... across_rows`
/// without an accumulator yet.
ReduceOp getAcrossRowsSum(Value value) {
  auto reduce = value.getDefiningOp<ReduceOp>();
  if (reduce && reduce.getKind() == ReductionKind::Sum &&
      reduce.getAcrossRows() && !reduce.getInit())
    return reduce;
  return {};
}

/// The same sum added to `accumulator`, or null where `value` is no sum a
/// main_grad can absorb: a cross-row `tile.reduce` (a broadcast weight's
/// gradient) without an accumulator yet, or a chain of `tile.contract_rows`
/// (a contracted matrix's, one link per use of the matrix) whose first
/// link has none. New ops rather than edits: the same sum may be the
/// cotangent of another argument too (w1 + w2 broadcast).
Value addedInto(OpBuilder &builder, Value value, Value accumulator) {
  if (ReduceOp sum = getAcrossRowsSum(value))
    return ReduceOp::create(builder, sum.getLoc(), ReductionKind::Sum,
                            sum.getInput(), sum.getDims(), accumulator);
  auto rows = value.getDefiningOp<ContractRowsOp>();
  if (!rows)
    return {};
  Value init = accumulator;
  if (Value link = rows.getInit()) {
    if (!link.getDefiningOp<ContractRowsOp>())
      return {};
    init = addedInto(builder, link, accumulator);
    if (!init)
      return {};
  }
  return ContractRowsOp::create(builder, rows.getLoc(), rows.getLeft(),
                                rows.getRight(), init);
}

/// Whether `value` is a sum addedInto can give a main_grad.
bool isAbsorbable(Value value) {
  if (getAcrossRowsSum(value))
    return true;
  auto rows = value.getDefiningOp<ContractRowsOp>();
  if (!rows)
    return false;
  Value init = rows.getInit();
  return !init || (init.getDefiningOp<ContractRowsOp>() && isAbsorbable(init));
}

class Differentiator {
public:
  Differentiator(func::FuncOp forward, const DifferentiateOptions &options)
      : forward(forward), options(options), builder(forward.getContext()) {}

  FailureOr<DerivedKernel> run();

private:
  LogicalResult checkForward();
  void recompute();
  void analyzeActivity();
  LogicalResult sweep();
  void accumulate(Value value, Value cotangent, Location loc);
  void buildReturn();
  void readForwardResults();
  void applyPolicy(DerivedKernel &derived);
  void eraseDeadOps();
  void dropPolicyMarks();

  func::FuncOp forward;
  const DifferentiateOptions &options;
  OpBuilder builder;
  func::FuncOp backward;
  Block *body = nullptr;
  unsigned numPrimals = 0, numCotangents = 0;
  /// Forward value -> its recomputation in the backward.
  IRMapping primal;
  /// Recomputed ops in forward order, and each recomputed value's original.
  SmallVector<Operation *> recomputed;
  DenseMap<Value, Value> originalOf;
  Operation *forwardReturn = nullptr;
  llvm::DenseSet<Value> active;
  DenseMap<Value, Value> cotangents;
};

LogicalResult Differentiator::checkForward() {
  if (!forward->hasAttr(TileDialect::getKernelAttrName()))
    return forward.emitOpError("is not a tile.kernel; only kernels can be "
                               "differentiated");
  if (failed(verifyKernel(forward)))
    return failure();
  for (unsigned index = 0; index < forward.getNumArguments(); ++index) {
    Type type = forward.getArgument(index).getType();
    if (isDifferentiableArgument(forward, index) && !isFloatTensor(type))
      return forward.emitOpError("argument #")
             << index << " is a differentiable " << type
             << " scalar; tile-differentiate derives gradients of tensors "
                "only: mark it {tile.nograd} or pass it as a tensor";
  }
  if (llvm::none_of(llvm::seq(forward.getNumArguments()), [&](unsigned i) {
        return isDifferentiableArgument(forward, i);
      }))
    return forward.emitOpError("has no differentiable argument (every "
                               "argument is a scalar or tile.nograd); there "
                               "is no gradient to derive");
  auto module = forward->getParentOfType<ModuleOp>();
  for (StringRef suffix : {"_bwd", "_fwd"}) {
    std::string name = (forward.getSymName() + suffix).str();
    if (SymbolTable::lookupSymbolIn(module, name))
      return forward.emitOpError("cannot derive @")
             << name << ": a symbol of that name already exists";
  }
  return success();
}

void Differentiator::recompute() {
  // Signature: the primal arguments, then one cotangent per result. Saved
  // values and main_grad accumulators are appended later.
  FunctionType type = forward.getFunctionType();
  numPrimals = type.getNumInputs();
  numCotangents = type.getNumResults();
  SmallVector<Type> inputs(type.getInputs());
  llvm::append_range(inputs, type.getResults());

  builder.setInsertionPointAfter(forward);
  backward = func::FuncOp::create(builder, forward.getLoc(),
                                  (forward.getSymName() + "_bwd").str(),
                                  builder.getFunctionType(inputs, {}));
  backward->setAttr(TileDialect::getKernelAttrName(), builder.getUnitAttr());
  backward->setAttr(TileDialect::getBackwardOfAttrName(),
                    FlatSymbolRefAttr::get(forward.getSymNameAttr()));
  // A primal argument keeps its attributes (tile.nograd) but not a role it
  // played for another function: a derived function differentiated again
  // has cotangent and saved arguments, which are plain primals here.
  for (unsigned index = 0; index < numPrimals; ++index) {
    backward.setArgAttrs(index, forward.getArgAttrDict(index));
    for (StringRef role : kArgumentRoles)
      backward.removeArgAttr(index, role);
  }
  for (unsigned index = 0; index < numCotangents; ++index)
    backward.setArgAttr(numPrimals + index, TileDialect::getCotangentAttrName(),
                        builder.getI64IntegerAttr(index));

  SmallVector<Location> locs(inputs.size(), forward.getLoc());
  body = builder.createBlock(&backward.getBody(), {}, inputs, locs);
  for (unsigned index = 0; index < numPrimals; ++index)
    primal.map(forward.getArgument(index), body->getArgument(index));
  for (Operation &op : forward.getBody().front()) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      forwardReturn = &op;
      continue;
    }
    Operation *clone = builder.clone(op, primal);
    recomputed.push_back(clone);
    for (auto [original, copy] :
         llvm::zip(op.getResults(), clone->getResults()))
      originalOf[copy] = original;
  }
}

void Differentiator::analyzeActivity() {
  // A row maximum no result depends on (a softmax's) varies with the input
  // but is held constant, as tile.stop_gradient would: its cotangent is
  // exactly 0 (InvariantRowStatistics.h).
  SmallVector<Value> results;
  for (Value result : forwardReturn->getOperands())
    results.push_back(primal.lookup(result));
  llvm::DenseSet<Value> constant =
      tile::detail::findInvariantRowStatistics(recomputed, results);
  llvm::DenseSet<Value> varied;
  for (unsigned index = 0; index < numPrimals; ++index)
    if (isDifferentiableArgument(forward, index))
      varied.insert(body->getArgument(index));
  for (Operation *op : recomputed) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return varied.contains(v); }))
      continue;
    for (Value result : op->getResults())
      if (isa<FloatType>(getElementTypeOrSelf(result)) &&
          !constant.contains(result))
        varied.insert(result);
  }

  llvm::DenseSet<Value> useful;
  for (Value result : forwardReturn->getOperands())
    useful.insert(primal.lookup(result));
  for (Operation *op : llvm::reverse(recomputed)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value v) { return useful.contains(v); }))
      continue;
    for (Value operand : op->getOperands())
      useful.insert(operand);
  }

  for (Value value : varied)
    if (useful.contains(value))
      active.insert(value);
}

void Differentiator::accumulate(Value value, Value cotangent, Location loc) {
  Value &slot = cotangents[value];
  if (!slot) {
    slot = cotangent;
    return;
  }
  AdjointBuilder adjoint(builder, loc);
  // Two cross-row sums of the same value (a weight broadcast twice) become
  // one sum of the sum: one partial/finalize pair for the scheduler, and a
  // single reduction a main_grad can absorb. The old sums are left for
  // eraseDeadOps: a rule may hand the same cotangent to several operands
  // (addf w, w), so one of them may still be another value's cotangent.
  ReduceOp lhs = getAcrossRowsSum(slot), rhs = getAcrossRowsSum(cotangent);
  if (lhs && rhs && lhs.getDims() == rhs.getDims() &&
      lhs.getInput().getType() == rhs.getInput().getType()) {
    Value both = adjoint.add(lhs.getInput(), rhs.getInput());
    slot = adjoint.reduceSum(both, lhs.getDims());
    return;
  }
  // Likewise two uses of one contracted matrix (a tied weight): one chain
  // of sums over the rows, which a main_grad absorbs whole.
  if (slot.getDefiningOp<ContractRowsOp>() &&
      cotangent.getDefiningOp<ContractRowsOp>() && isAbsorbable(slot) &&
      isAbsorbable(cotangent) && slot.getType() == cotangent.getType()) {
    slot = addedInto(builder, cotangent, slot);
    return;
  }
  slot = adjoint.add(slot, cotangent);
}

LogicalResult Differentiator::sweep() {
  builder.setInsertionPointToEnd(body);
  // Seed: the cotangent of each result, in f32.
  for (auto [index, result] : llvm::enumerate(forwardReturn->getOperands())) {
    Value value = primal.lookup(result);
    if (!active.contains(value))
      continue;
    AdjointBuilder adjoint(builder, forwardReturn->getLoc());
    Value seed = body->getArgument(numPrimals + index);
    accumulate(value, adjoint.castTo(seed, builder.getF32Type()),
               forwardReturn->getLoc());
  }

  for (Operation *op : llvm::reverse(recomputed)) {
    SmallVector<Value> resultCotangents;
    for (Value result : op->getResults())
      resultCotangents.push_back(cotangents.lookup(result));
    if (llvm::all_of(resultCotangents, [](Value v) { return !v; }))
      continue;
    for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (active.contains(value) && !isFloatTensor(value.getType()))
        return op->emitOpError("computes on the differentiable scalar ")
               << value.getType()
               << "; tile-differentiate differentiates tensor values only";
    auto rule = dyn_cast<DifferentiableOpInterface>(op);
    if (!rule)
      return op->emitOpError("has no derivative rule; tile-differentiate "
                             "cannot propagate a gradient through it");
    AdjointBuilder adjoint(builder, op->getLoc());
    adjoint.setActiveValues(&active);
    SmallVector<Value> operandCotangents;
    if (failed(rule.buildAdjoint(adjoint, resultCotangents, operandCotangents)))
      return failure();
    if (operandCotangents.size() != op->getNumOperands())
      return op->emitOpError("derivative rule produced ")
             << operandCotangents.size() << " cotangents for "
             << op->getNumOperands() << " operands";
    for (auto [operand, cotangent] :
         llvm::zip(op->getOperands(), operandCotangents))
      if (cotangent && active.contains(operand))
        accumulate(operand, cotangent, op->getLoc());
  }
  return success();
}

void Differentiator::buildReturn() {
  builder.setInsertionPointToEnd(body);
  AdjointBuilder adjoint(builder, forwardReturn->getLoc());
  SmallVector<Value> gradients;
  SmallVector<unsigned> gradientOf;
  for (unsigned index = 0; index < numPrimals; ++index) {
    if (!isDifferentiableArgument(forward, index))
      continue;
    Value arg = body->getArgument(index);
    Type argType = arg.getType();
    Value cotangent = cotangents.lookup(arg);
    gradientOf.push_back(index);
    if (cotangent && isAbsorbable(cotangent) && options.mainGrad) {
      // The gradient never exists on its own: the finalize adds it to the
      // caller's fp32 buffer, which the result then is.
      Type accType = AdjointBuilder::cotangentType(argType);
      unsigned position = backward.getNumArguments();
      (void)backward.insertArgument(
          position, accType,
          builder.getDictionaryAttr(
              builder.getNamedAttr(TileDialect::getMainGradAttrName(),
                                   builder.getI64IntegerAttr(index))),
          forward.getLoc());
      gradients.push_back(
          addedInto(builder, cotangent, body->getArgument(position)));
      continue;
    }
    if (!cotangent)
      cotangent = adjoint.constantLike(0.0, arg);
    gradients.push_back(
        adjoint.castTo(cotangent, getElementTypeOrSelf(argType)));
  }
  unsigned numGradients = gradients.size();
  SmallVector<Value> results(gradients);
  if (options.returnPrimal)
    for (Value result : forwardReturn->getOperands())
      results.push_back(primal.lookup(result));
  func::ReturnOp::create(builder, forwardReturn->getLoc(), results);
  backward.setFunctionType(builder.getFunctionType(
      body->getArgumentTypes(), ValueRange(results).getTypes()));
  for (auto [position, index] : llvm::enumerate(gradientOf))
    backward.setResultAttr(position, TileDialect::getGradientAttrName(),
                           builder.getI64IntegerAttr(index));
  for (unsigned index = 0; index + numGradients < results.size(); ++index)
    backward.setResultAttr(numGradients + index,
                           TileDialect::getPrimalAttrName(),
                           builder.getI64IntegerAttr(index));
}

void Differentiator::readForwardResults() {
  // A backward that returns the primal recomputes it by definition.
  if (options.returnPrimal)
    return;
  SmallVector<Value> recomputedResults;
  for (Value result : forwardReturn->getOperands())
    recomputedResults.push_back(primal.lookupOrDefault(result));
  // A softmax's backward through the y it returns (QuotientResults.h),
  // where that lets it read y instead of x.
  tile::detail::expressThroughQuotients(body, numPrimals, recomputed,
                                        recomputedResults);
  // After the cotangents, in the order chosen (saved values go before them
  // later, main_grad accumulators stay last).
  unsigned position = numPrimals + numCotangents;
  while (std::optional<tile::detail::ForwardResultRead> read =
             tile::detail::nextForwardResult(body, numPrimals,
                                             recomputedResults)) {
    Value result = forwardReturn->getOperand(read->result);
    (void)backward.insertArgument(
        position, result.getType(),
        builder.getDictionaryAttr(
            builder.getNamedAttr(TileDialect::getForwardResultAttrName(),
                                 builder.getI64IntegerAttr(read->result))),
        result.getLoc());
    Value argument = body->getArgument(position++);
    if (argument.getType() != read->replaced.getType()) {
      // The f32 value a 16-bit result rounds, read back rounded.
      builder.setInsertionPointToStart(body);
      argument = CastOp::create(builder, result.getLoc(),
                                read->replaced.getType(), argument);
    }
    read->replaced.replaceAllUsesWith(argument);
  }
}

void Differentiator::applyPolicy(DerivedKernel &derived) {
  SmallVector<Value> saved =
      tile::detail::chooseSavedValues(recomputed, options);
  if (saved.empty())
    return;
  // The forward variant returns the saved values after its results.
  IRMapping map;
  builder.setInsertionPointAfter(forward);
  auto variant = cast<func::FuncOp>(builder.clone(*forward, map));
  variant.setSymName((forward.getSymName() + "_fwd").str());
  // It is the forward of `forward` only, whatever `forward` was derived
  // from (a derived function differentiated again), and its arguments are
  // `forward`'s primal inputs, as the backward's are (recompute()).
  variant->removeAttr(TileDialect::getBackwardOfAttrName());
  variant->setAttr(TileDialect::getForwardOfAttrName(),
                   FlatSymbolRefAttr::get(forward.getSymNameAttr()));
  for (unsigned index = 0; index < numPrimals; ++index)
    for (StringRef role : kArgumentRoles)
      variant.removeArgAttr(index, role);
  Operation *variantReturn = variant.getBody().front().getTerminator();
  SmallVector<Value> results(variantReturn->getOperands());
  unsigned firstSaved = results.size();
  // The backward takes them after the cotangents. Both signatures change
  // once, not once per saved value: each change builds a new function type
  // and attribute array, which the context keeps, so a change per value
  // was quadratic in time and memory (20,000 saved row values: 1.9 GB).
  unsigned firstSavedArgument = numPrimals + numCotangents;
  SmallVector<unsigned> positions(saved.size(), firstSavedArgument);
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Location> locs;
  for (auto [k, value] : llvm::enumerate(saved)) {
    results.push_back(map.lookup(originalOf[value]));
    types.push_back(value.getType());
    argAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        TileDialect::getSavedAttrName(), builder.getI64IntegerAttr(k))));
    locs.push_back(value.getLoc());
  }
  if (failed(backward.insertArguments(positions, types, argAttrs, locs)))
    llvm_unreachable("inserting tensor arguments cannot fail");
  for (auto [k, value] : llvm::enumerate(saved))
    value.replaceAllUsesWith(body->getArgument(firstSavedArgument + k));
  variantReturn->setOperands(results);
  // The clone keeps the forward's result attributes, an array of the old
  // arity: extended with the saved values' before the function type.
  SmallVector<DictionaryAttr> resultAttrs;
  variant.getAllResultAttrs(resultAttrs);
  resultAttrs.resize(firstSaved, builder.getDictionaryAttr({}));
  for (unsigned k = 0; k < saved.size(); ++k)
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        TileDialect::getSavedAttrName(), builder.getI64IntegerAttr(k))));
  variant.setFunctionType(builder.getFunctionType(
      variant.getArgumentTypes(), ValueRange(results).getTypes()));
  variant.setAllResultAttrs(resultAttrs);
  derived.forwardWithSaved = variant;
}

void Differentiator::eraseDeadOps() {
  // `recomputed` and `originalOf` are read after this (the policy); the
  // activity sets, cotangents and `primal` are not, and may keep values
  // of erased ops.
  llvm::DenseSet<Operation *> erased;
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body))) {
    if (!isOpTriviallyDead(&op))
      continue;
    for (Value result : op.getResults())
      originalOf.erase(result);
    erased.insert(&op);
    op.erase();
  }
  llvm::erase_if(recomputed,
                 [&](Operation *op) { return erased.contains(op); });
}

void Differentiator::dropPolicyMarks() {
  // The policy attributes describe the forward; the backward has no say.
  for (Operation &op : *body) {
    op.removeAttr(TileDialect::getSaveAttrName());
    op.removeAttr(TileDialect::getRecomputeAttrName());
  }
}

FailureOr<DerivedKernel> Differentiator::run() {
  if (failed(checkForward()))
    return failure();
  recompute();
  analyzeActivity();
  if (failed(sweep())) {
    backward.erase();
    return failure();
  }
  buildReturn();
  readForwardResults();
  // Before the policy, which saves only what the backward still reads (a
  // softmax reading y keeps no row statistic).
  eraseDeadOps();
  DerivedKernel derived{backward, {}};
  applyPolicy(derived);
  eraseDeadOps();
  dropPolicyMarks();
  return derived;
}

} // namespace

FailureOr<DerivedKernel>
mlir::tile::differentiateKernel(func::FuncOp forward,
                                const DifferentiateOptions &options) {
  return Differentiator(forward, options).run();
}
