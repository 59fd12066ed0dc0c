//===- InvariantRowStatistics.cpp - row maxima no result depends on ------===//
//
// One forward pass per candidate over the ops after it, with the change of
// every value it reaches in one of RowShift's forms. A value it does not
// reach has none. Kernels hold tens of ops and a few row maxima, so the
// passes cost nothing next to differentiating.
//
//===----------------------------------------------------------------------===//

#include "InvariantRowStatistics.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::tile;

namespace {

/// A row maximum or minimum: the statistics a stable softmax subtracts.
bool isRowExtreme(Operation *op) {
  auto reduce = dyn_cast<ReduceOp>(op);
  if (!reduce || reduce.getInit() || reduce.getAcrossRows())
    return false;
  if (reduce.getKind() != ReductionKind::Max &&
      reduce.getKind() != ReductionKind::Min)
    return false;
  ArrayRef<int64_t> dims = reduce.getDims();
  int64_t rank = reduce.getInput().getType().getRank();
  return rank >= 2 && dims.size() == 1 && dims.front() == rank - 1;
}

/// Whether no value of `results` changes when `statistic`, the result of
/// ops[first], moves by δ per row.
bool reachesNoResult(ArrayRef<Operation *> ops, size_t first,
                     ValueRange results) {
  llvm::DenseSet<Value> returned(results.begin(), results.end());
  llvm::DenseMap<Value, RowShift> changes;
  changes.try_emplace(ops[first]->getResult(0), RowShift::offset(1.0));
  auto changeOf = [&](Value value) {
    auto it = changes.find(value);
    return it == changes.end() ? RowShift::none() : it->second;
  };
  SmallVector<RowShift> operands;
  for (Operation *op : ops.drop_front(first + 1)) {
    operands.clear();
    for (Value operand : op->getOperands())
      operands.push_back(changeOf(operand));
    if (llvm::all_of(operands, [](RowShift s) { return s.isNone(); }))
      continue;
    // An op without a derivative rule (tensor.dim, index math, remf): no
    // rule says how a change passes, so any may.
    auto rule = dyn_cast<DifferentiableOpInterface>(op);
    RowShift change =
        rule ? rule.propagateRowShift(operands) : RowShift::unknown();
    if (change.isNone())
      continue;
    for (Value result : op->getResults()) {
      // Most candidates reach a result early (a min-max scaling's): stop
      // there rather than follow the rest of the kernel.
      if (returned.contains(result))
        return false;
      changes.insert_or_assign(result, change);
    }
  }
  return llvm::all_of(results,
                      [&](Value value) { return changeOf(value).isNone(); });
}

} // namespace

llvm::DenseSet<Value>
tile::detail::findInvariantRowStatistics(ArrayRef<Operation *> ops,
                                         ValueRange results) {
  llvm::DenseSet<Value> invariant;
  for (auto [index, op] : llvm::enumerate(ops))
    if (isRowExtreme(op) && reachesNoResult(ops, index, results))
      invariant.insert(op->getResult(0));
  return invariant;
}
