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

Fn unary(double (*fn)(double)) {
  return [fn](llvm::ArrayRef<double> a) { return fn(a[0]); };
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double rsqrt(double x) { return 1.0 / std::sqrt(x); }
double exp2d(double x) { return std::exp2(x); }

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
} // namespace

std::optional<llvm::Error> detail::evalElementwise(Operation *op, Env &env) {
  using A = llvm::ArrayRef<double>;
  auto map = [&](const Fn &fn) -> std::optional<llvm::Error> {
    return mapElements(op, env, fn);
  };
  return llvm::TypeSwitch<Operation *, std::optional<llvm::Error>>(op)
      .Case([&](arith::ConstantOp constant) -> std::optional<llvm::Error> {
        return evalConstant(constant, env);
      })
      // Float arithmetic.
      .Case([&](arith::AddFOp) { return map([](A a) { return a[0] + a[1]; }); })
      .Case([&](arith::SubFOp) { return map([](A a) { return a[0] - a[1]; }); })
      .Case([&](arith::MulFOp) { return map([](A a) { return a[0] * a[1]; }); })
      .Case([&](arith::DivFOp) { return map([](A a) { return a[0] / a[1]; }); })
      .Case([&](arith::RemFOp) {
        return map([](A a) { return std::fmod(a[0], a[1]); });
      })
      .Case([&](arith::NegFOp) { return map([](A a) { return -a[0]; }); })
      .Case([&](arith::MaximumFOp) {
        return map([](A a) {
          return std::isnan(a[0]) || std::isnan(a[1]) ? NAN
                                                      : std::max(a[0], a[1]);
        });
      })
      .Case([&](arith::MinimumFOp) {
        return map([](A a) {
          return std::isnan(a[0]) || std::isnan(a[1]) ? NAN
                                                      : std::min(a[0], a[1]);
        });
      })
      .Case([&](arith::MaxNumFOp) {
        return map([](A a) { return std::fmax(a[0], a[1]); });
      })
      .Case([&](arith::MinNumFOp) {
        return map([](A a) { return std::fmin(a[0], a[1]); });
      })
      .Case([&](arith::CmpFOp cmp) {
        arith::CmpFPredicate predicate = cmp.getPredicate();
        return map([predicate](A a) {
          return compare(predicate, a[0], a[1]) ? 1.0 : 0.0;
        });
      })
      .Case([&](arith::SelectOp) {
        return map([](A a) { return a[0] != 0.0 ? a[1] : a[2]; });
      })
      // Integer and index arithmetic (sizes and offsets for tile.slice).
      .Case([&](arith::AddIOp) { return map([](A a) { return a[0] + a[1]; }); })
      .Case([&](arith::SubIOp) { return map([](A a) { return a[0] - a[1]; }); })
      .Case([&](arith::MulIOp) { return map([](A a) { return a[0] * a[1]; }); })
      .Case<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp>(
          [&](Operation *intOp) -> std::optional<llvm::Error> {
            bool isDiv = isa<arith::DivSIOp, arith::DivUIOp>(intOp);
            bool isUnsigned = isa<arith::DivUIOp, arith::RemUIOp>(intOp);
            for (Value operand : intOp->getOperands().drop_front())
              for (double v : env.get(operand).values)
                if (asInt(v) == 0)
                  return opError(intOp, "integer division by zero");
            // INT64_MIN / -1 overflows (and traps on x86): arith says the
            // result is undefined, so a kernel that computes it is wrong.
            if (!isUnsigned)
              for (auto [v, w] :
                   llvm::zip(env.get(intOp->getOperand(0)).values,
                             env.get(intOp->getOperand(1)).values))
                if (asInt(v) == std::numeric_limits<int64_t>::min() &&
                    asInt(w) == -1)
                  return opError(intOp, "signed integer division overflows "
                                        "(the minimum value by -1)");
            return map([isDiv, isUnsigned](A a) {
              int64_t x = asInt(a[0]), y = asInt(a[1]);
              if (isUnsigned) {
                uint64_t ux = static_cast<uint64_t>(x),
                         uy = static_cast<uint64_t>(y);
                return static_cast<double>(isDiv ? ux / uy : ux % uy);
              }
              return static_cast<double>(isDiv ? x / y : x % y);
            });
          })
      .Case([&](arith::MaxSIOp) {
        return map([](A a) { return std::max(a[0], a[1]); });
      })
      .Case([&](arith::MinSIOp) {
        return map([](A a) { return std::min(a[0], a[1]); });
      })
      .Case<arith::IndexCastOp, arith::SIToFPOp>(
          [&](Operation *) { return map([](A a) { return a[0]; }); })
      // math.
      .Case([&](math::ExpOp) {
        return map(unary([](double x) { return std::exp(x); }));
      })
      .Case([&](math::Exp2Op) { return map(unary(exp2d)); })
      .Case([&](math::ExpM1Op) {
        return map(unary([](double x) { return std::expm1(x); }));
      })
      .Case([&](math::LogOp) {
        return map(unary([](double x) { return std::log(x); }));
      })
      .Case([&](math::Log2Op) {
        return map(unary([](double x) { return std::log2(x); }));
      })
      .Case([&](math::Log10Op) {
        return map(unary([](double x) { return std::log10(x); }));
      })
      .Case([&](math::Log1pOp) {
        return map(unary([](double x) { return std::log1p(x); }));
      })
      .Case([&](math::SqrtOp) {
        return map(unary([](double x) { return std::sqrt(x); }));
      })
      .Case([&](math::RsqrtOp) { return map(unary(rsqrt)); })
      .Case([&](math::TanhOp) {
        return map(unary([](double x) { return std::tanh(x); }));
      })
      .Case([&](math::ErfOp) {
        return map(unary([](double x) { return std::erf(x); }));
      })
      .Case([&](math::SinOp) {
        return map(unary([](double x) { return std::sin(x); }));
      })
      .Case([&](math::CosOp) {
        return map(unary([](double x) { return std::cos(x); }));
      })
      .Case([&](math::AbsFOp) {
        return map(unary([](double x) { return std::fabs(x); }));
      })
      .Case([&](math::FloorOp) {
        return map(unary([](double x) { return std::floor(x); }));
      })
      .Case([&](math::CeilOp) {
        return map(unary([](double x) { return std::ceil(x); }));
      })
      .Case([&](math::PowFOp) {
        return map([](A a) { return std::pow(a[0], a[1]); });
      })
      .Case([&](math::FmaOp) {
        return map([](A a) { return a[0] * a[1] + a[2]; });
      })
      .Case([&](mlir::tile::SigmoidOp) { return map(unary(sigmoid)); })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace tile::interp
