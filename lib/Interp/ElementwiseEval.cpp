//===- ElementwiseEval.cpp - arith / math / tile.sigmoid in float64 ------===//
//
// Every elementwise op maps equal-shaped operands (or scalars) to a result of
// the same shape. Float math is evaluated in double: the reference is more
// accurate than the f32 the GPU computes in, by design.
//
//===----------------------------------------------------------------------===//

#include "EvalInternal.h"
#include "tile/Dialect/Tile/IR/TileOps.h"
#include "tile/Interp/Inputs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;

namespace tile::interp {
using namespace detail;

namespace {
using Fn = std::function<double(llvm::ArrayRef<double>)>;

/// Applies `fn` element by element. Tensor operands must share one shape;
/// scalar operands are used for every element.
llvm::Error mapElements(Operation *op, Env &env, const Fn &fn) {
  const Buffer *shapeSource = nullptr;
  std::vector<const Buffer *> operands;
  for (Value operand : op->getOperands()) {
    const Buffer &buffer = env.get(operand);
    operands.push_back(&buffer);
    if (!buffer.isTensor)
      continue;
    if (shapeSource && shapeSource->shape != buffer.shape)
      return opError(op, "operands have different shapes at run time: " +
                             shapeSpec(shapeSource->shape) + " and " +
                             shapeSpec(buffer.shape));
    shapeSource = &buffer;
  }
  Type resultType = op->getResult(0).getType();
  Buffer result =
      shapeSource ? Buffer::tensor(shapeSource->shape, storageOf(resultType))
                  : Buffer::scalar(0.0, storageOf(resultType));
  std::vector<double> args(operands.size());
  for (int64_t index = 0, end = result.numElements(); index < end; ++index) {
    for (size_t i = 0; i < operands.size(); ++i)
      args[i] = operands[i]->values[operands[i]->isTensor ? index : 0];
    result.values[index] = fn(args);
  }
  env.values[op->getResult(0)] = std::move(result);
  return llvm::Error::success();
}

bool compare(arith::CmpFPredicate predicate, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  using P = arith::CmpFPredicate;
  switch (predicate) {
  case P::AlwaysFalse:
    return false;
  case P::AlwaysTrue:
    return true;
  case P::OEQ:
    return !unordered && a == b;
  case P::OGT:
    return !unordered && a > b;
  case P::OGE:
    return !unordered && a >= b;
  case P::OLT:
    return !unordered && a < b;
  case P::OLE:
    return !unordered && a <= b;
  case P::ONE:
    return !unordered && a != b;
  case P::ORD:
    return !unordered;
  case P::UEQ:
    return unordered || a == b;
  case P::UGT:
    return unordered || a > b;
  case P::UGE:
    return unordered || a >= b;
  case P::ULT:
    return unordered || a < b;
  case P::ULE:
    return unordered || a <= b;
  case P::UNE:
    return unordered || a != b;
  case P::UNO:
    return unordered;
  }
  return false;
}

llvm::Error evalConstant(arith::ConstantOp op, Env &env) {
  Attribute value = op.getValue();
  Type type = op.getType();
  if (auto floatAttr = dyn_cast<FloatAttr>(value)) {
    env.values[op] =
        Buffer::scalar(floatAttr.getValueAsDouble(), storageOf(type));
    return llvm::Error::success();
  }
  if (auto intAttr = dyn_cast<IntegerAttr>(value)) {
    double v = type.isInteger(1)
                   ? static_cast<double>(intAttr.getValue().getZExtValue())
                   : static_cast<double>(intAttr.getValue().getSExtValue());
    env.values[op] = Buffer::scalar(v, StorageType::F64);
    return llvm::Error::success();
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!dense || !tensorType)
    return opError(op, "unsupported constant");
  Buffer result =
      Buffer::tensor(std::vector<int64_t>(tensorType.getShape().begin(),
                                          tensorType.getShape().end()),
                     storageOf(type));
  int64_t index = 0;
  if (isa<FloatType>(tensorType.getElementType())) {
    for (const APFloat &element : dense.getValues<APFloat>())
      result.values[index++] = element.convertToDouble();
  } else {
    for (const APInt &element : dense.getValues<APInt>())
      result.values[index++] = static_cast<double>(element.getSExtValue());
  }
  env.values[op] = std::move(result);
  return llvm::Error::success();
}

using A = llvm::ArrayRef<double>;

// One formula per op of KernelOps.def, in float64. evalElementwise
// dispatches on that list, so an op added there without a formula here
// does not compile.
double apply(arith::AddFOp, A a) { return a[0] + a[1]; }
double apply(arith::SubFOp, A a) { return a[0] - a[1]; }
double apply(arith::MulFOp, A a) { return a[0] * a[1]; }
double apply(arith::DivFOp, A a) { return a[0] / a[1]; }
double apply(arith::RemFOp, A a) { return std::fmod(a[0], a[1]); }
double apply(arith::NegFOp, A a) { return -a[0]; }
double apply(arith::MaximumFOp, A a) {
  return std::isnan(a[0]) || std::isnan(a[1]) ? NAN : std::max(a[0], a[1]);
}
double apply(arith::MinimumFOp, A a) {
  return std::isnan(a[0]) || std::isnan(a[1]) ? NAN : std::min(a[0], a[1]);
}
double apply(arith::MaxNumFOp, A a) { return std::fmax(a[0], a[1]); }
double apply(arith::MinNumFOp, A a) { return std::fmin(a[0], a[1]); }
double apply(arith::CmpFOp cmp, A a) {
  return compare(cmp.getPredicate(), a[0], a[1]) ? 1.0 : 0.0;
}
double apply(arith::SelectOp, A a) { return a[0] != 0.0 ? a[1] : a[2]; }

// Integer and index arithmetic (sizes and offsets for tile.slice); the
// divisions are checked first (checkDivision).
double apply(arith::AddIOp, A a) { return a[0] + a[1]; }
double apply(arith::SubIOp, A a) { return a[0] - a[1]; }
double apply(arith::MulIOp, A a) { return a[0] * a[1]; }
double apply(arith::DivSIOp, A a) {
  return static_cast<double>(asInt(a[0]) / asInt(a[1]));
}
double apply(arith::RemSIOp, A a) {
  return static_cast<double>(asInt(a[0]) % asInt(a[1]));
}
double apply(arith::DivUIOp, A a) {
  return static_cast<double>(static_cast<uint64_t>(asInt(a[0])) /
                             static_cast<uint64_t>(asInt(a[1])));
}
double apply(arith::RemUIOp, A a) {
  return static_cast<double>(static_cast<uint64_t>(asInt(a[0])) %
                             static_cast<uint64_t>(asInt(a[1])));
}
double apply(arith::MaxSIOp, A a) { return std::max(a[0], a[1]); }
double apply(arith::MinSIOp, A a) { return std::min(a[0], a[1]); }
double apply(arith::IndexCastOp, A a) { return a[0]; }
double apply(arith::SIToFPOp, A a) { return a[0]; }

double apply(math::ExpOp, A a) { return std::exp(a[0]); }
double apply(math::Exp2Op, A a) { return std::exp2(a[0]); }
double apply(math::ExpM1Op, A a) { return std::expm1(a[0]); }
double apply(math::LogOp, A a) { return std::log(a[0]); }
double apply(math::Log2Op, A a) { return std::log2(a[0]); }
double apply(math::Log10Op, A a) { return std::log10(a[0]); }
double apply(math::Log1pOp, A a) { return std::log1p(a[0]); }
double apply(math::SqrtOp, A a) { return std::sqrt(a[0]); }
double apply(math::RsqrtOp, A a) { return 1.0 / std::sqrt(a[0]); }
double apply(math::TanhOp, A a) { return std::tanh(a[0]); }
double apply(math::ErfOp, A a) { return std::erf(a[0]); }
double apply(math::SinOp, A a) { return std::sin(a[0]); }
double apply(math::CosOp, A a) { return std::cos(a[0]); }
double apply(math::AbsFOp, A a) { return std::fabs(a[0]); }
double apply(math::FloorOp, A a) { return std::floor(a[0]); }
double apply(math::CeilOp, A a) { return std::ceil(a[0]); }
double apply(math::PowFOp, A a) { return std::pow(a[0], a[1]); }
double apply(math::FmaOp, A a) { return a[0] * a[1] + a[2]; }
double apply(mlir::tile::SigmoidOp, A a) {
  return 1.0 / (1.0 + std::exp(-a[0]));
}
double apply(mlir::tile::StopGradientOp, A a) { return a[0]; }

/// A division by zero, or INT64_MIN / -1 (which overflows, and traps on
/// x86: arith says the result is undefined, so a kernel that computes it is
/// wrong), is an error rather than a value.
llvm::Error checkDivision(Operation *op, Env &env) {
  for (Value operand : op->getOperands().drop_front())
    for (double v : env.get(operand).values)
      if (asInt(v) == 0)
        return opError(op, "integer division by zero");
  if (isa<arith::DivSIOp, arith::RemSIOp>(op))
    for (auto [v, w] : llvm::zip(env.get(op->getOperand(0)).values,
                                 env.get(op->getOperand(1)).values))
      if (asInt(v) == std::numeric_limits<int64_t>::min() && asInt(w) == -1)
        return opError(op, "signed integer division overflows (the minimum "
                           "value by -1)");
  return llvm::Error::success();
}

template <typename OpTy> llvm::Error evalOp(OpTy op, Env &env) {
  if constexpr (std::is_same_v<OpTy, arith::ConstantOp>) {
    return evalConstant(op, env);
  } else {
    if constexpr (llvm::is_one_of<OpTy, arith::DivSIOp, arith::DivUIOp,
                                  arith::RemSIOp, arith::RemUIOp>::value)
      if (llvm::Error error = checkDivision(op, env))
        return error;
    return mapElements(op, env, [op](A a) { return apply(op, a); });
  }
}
} // namespace

std::optional<llvm::Error> detail::evalElementwise(Operation *op, Env &env) {
  std::optional<llvm::Error> result;
  auto evaluate = [&](auto typed) { result = evalOp(typed, env); };
  llvm::TypeSwitch<Operation *>(op)
#define TILE_KERNEL_OP(QualifiedName)                                          \
  .Case([&](QualifiedName typed) { evaluate(typed); })
#include "tile/Dialect/Tile/IR/KernelOps.def"
      .Case([&](mlir::tile::SigmoidOp typed) { evaluate(typed); })
      .Case([&](mlir::tile::StopGradientOp typed) { evaluate(typed); });
  return result;
}

} // namespace tile::interp
