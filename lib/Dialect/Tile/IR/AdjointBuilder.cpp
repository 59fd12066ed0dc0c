//===- AdjointBuilder.cpp - the vocabulary of derivative rules ------------===//

#include "tile/Dialect/Tile/IR/AdjointBuilder.h"
#include "tile/Dialect/Tile/IR/TileOps.h"

using namespace mlir;
using namespace mlir::tile;

RankedTensorType AdjointBuilder::cotangentType(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(),
                               Float32Type::get(type.getContext()));
}

Value AdjointBuilder::add(Value a, Value b) {
  return arith::AddFOp::create(builder, loc, a, b);
}
Value AdjointBuilder::sub(Value a, Value b) {
  return arith::SubFOp::create(builder, loc, a, b);
}
Value AdjointBuilder::mul(Value a, Value b) {
  return arith::MulFOp::create(builder, loc, a, b);
}
Value AdjointBuilder::div(Value a, Value b) {
  return arith::DivFOp::create(builder, loc, a, b);
}
Value AdjointBuilder::neg(Value a) {
  return arith::NegFOp::create(builder, loc, a);
}
Value AdjointBuilder::cmp(arith::CmpFPredicate predicate, Value a, Value b) {
  return arith::CmpFOp::create(builder, loc, predicate, a, b);
}
Value AdjointBuilder::select(Value condition, Value ifTrue, Value ifFalse) {
  return arith::SelectOp::create(builder, loc, condition, ifTrue, ifFalse);
}

Value AdjointBuilder::constantLike(double value, Value like) {
  Type f32 = builder.getF32Type();
  Value scalar = arith::ConstantOp::create(builder, loc, f32,
                                           builder.getFloatAttr(f32, value));
  return splat(scalar, like);
}

Value AdjointBuilder::splat(Value scalar, Value like) {
  return SplatOp::create(builder, loc, cotangentType(like.getType()), scalar,
                         like);
}

Value AdjointBuilder::broadcast(Value input, ArrayRef<int64_t> dims,
                                Value like) {
  return BroadcastOp::create(builder, loc, cotangentType(like.getType()), input,
                             dims, like);
}

Value AdjointBuilder::reduceSum(Value input, ArrayRef<int64_t> dims) {
  return ReduceOp::create(builder, loc, ReductionKind::Sum, input, dims);
}

Value AdjointBuilder::contract(Value input, Value matrix, int64_t over,
                               Value like) {
  return ContractOp::create(builder, loc, cotangentType(like.getType()), input,
                            matrix, builder.getI64IntegerAttr(over));
}

Value AdjointBuilder::contractRows(Value left, Value right, Value like) {
  return ContractRowsOp::create(builder, loc, cotangentType(like.getType()),
                                left, right, Value());
}

Value AdjointBuilder::dimSize(Value tensor, int64_t dim) {
  return tensor::DimOp::create(builder, loc, tensor, dim);
}

Value AdjointBuilder::indexAdd(Value a, Value b) {
  return arith::AddIOp::create(builder, loc, a, b);
}

Value AdjointBuilder::elementCount(Value tensor, ArrayRef<int64_t> dims) {
  Value count = arith::ConstantIndexOp::create(builder, loc, 1);
  for (int64_t dim : dims)
    count = arith::MulIOp::create(builder, loc, count, dimSize(tensor, dim));
  Value asInt =
      arith::IndexCastOp::create(builder, loc, builder.getI64Type(), count);
  return arith::SIToFPOp::create(builder, loc, builder.getF32Type(), asInt);
}

Value AdjointBuilder::castTo(Value value, Type elementType) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == elementType)
    return value;
  return CastOp::create(builder, loc, type.clone(elementType), value);
}
