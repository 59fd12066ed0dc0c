//===- TileDialect.td - the tile dialect definition --------*- tablegen -*-===//
//
// The `tile` dialect describes elementwise and reduction GPU kernels as pure
// functions over whole tensors. Upstream `arith` and `math` ops provide the
// elementwise arithmetic; this dialect adds what they cannot say: casts between
// storage types, explicit broadcasts, reductions, last-dim slices and
// concatenation, and the markers that tell the differentiator what to derive.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_IR_TILEDIALECT_TD
#define TILE_DIALECT_TILE_IR_TILEDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::mlir::tile";
  let summary = "Tile kernels: value-semantic elementwise and reduction kernels";
  let description = [{
    A kernel is a `func.func` carrying the unit attribute `tile.kernel`. Its
    arguments are ranked tensors of `bf16`, `f16` or `f32` (storage types) and
    scalar parameters (`f32`, `index`, `i32`, `i64`). Leading dimensions are
    parallel ("rows"); reductions may run over any dimension. All arithmetic
    is done in `f32`: a kernel converts its storage types with `tile.cast`.

    An argument with the unit attribute `tile.nograd` is not differentiated
    (epsilon, offsets, masks); every other floating-point argument is.

    ```mlir
    func.func @scale(%x: tensor<?x?xbf16>, %s: f32 {tile.nograd})
        -> tensor<?x?xbf16> attributes {tile.kernel} {
      %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
      %sv = tile.splat %s like %xf : f32, tensor<?x?xf32> -> tensor<?x?xf32>
      %y = arith.mulf %xf, %sv : tensor<?x?xf32>
      %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
      return %yb : tensor<?x?xbf16>
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::func::FuncDialect"
  ];
  let hasCanonicalizer = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Unit attribute on a `func.func` that makes it a tile kernel.
    static constexpr ::llvm::StringLiteral getKernelAttrName() {
      return ::llvm::StringLiteral("tile.kernel");
    }
    /// Unit argument attribute: the argument gets no cotangent.
    static constexpr ::llvm::StringLiteral getNoGradAttrName() {
      return ::llvm::StringLiteral("tile.nograd");
    }

    // Recompute policy, per op (unit attributes on a forward op): always
    // save its result for the backward, or never.
    static constexpr ::llvm::StringLiteral getSaveAttrName() {
      return ::llvm::StringLiteral("tile.save");
    }
    static constexpr ::llvm::StringLiteral getRecomputeAttrName() {
      return ::llvm::StringLiteral("tile.recompute");
    }

    // On a kernel: widths the JIT specialized it for, {w<i> = N : i64}
    // (tensor argument i is N wide); the GPU kernels use them as constants.
    static constexpr ::llvm::StringLiteral getSpecializeAttrName() {
      return ::llvm::StringLiteral("tile.specialize");
    }

    // Written by tile-differentiate. On functions: `@f_bwd` is the backward
    // of `@f`, `@f_fwd` the forward variant that also returns saved values.
    static constexpr ::llvm::StringLiteral getBackwardOfAttrName() {
      return ::llvm::StringLiteral("tile.backward_of");
    }
    static constexpr ::llvm::StringLiteral getForwardOfAttrName() {
      return ::llvm::StringLiteral("tile.forward_of");
    }
    // The role of each backward argument and result (an index): cotangent of
    // forward result #i, saved value #i, main_grad accumulator of forward
    // argument #i; a result is the gradient of forward argument #i, or
    // (tile-differentiate's return-primal) forward result #i, recomputed.
    static constexpr ::llvm::StringLiteral getCotangentAttrName() {
      return valueRoleAttribute(ValueRole::Cotangent);
    }
    static constexpr ::llvm::StringLiteral getSavedAttrName() {
      return valueRoleAttribute(ValueRole::Saved);
    }
    static constexpr ::llvm::StringLiteral getMainGradAttrName() {
      return valueRoleAttribute(ValueRole::MainGrad);
    }
    static constexpr ::llvm::StringLiteral getGradientAttrName() {
      return valueRoleAttribute(ValueRole::Gradient);
    }
    static constexpr ::llvm::StringLiteral getPrimalAttrName() {
      return valueRoleAttribute(ValueRole::Primal);
    }
    static constexpr ::llvm::StringLiteral getForwardResultAttrName() {
      return valueRoleAttribute(ValueRole::ForwardResult);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Tile_ReductionKind : I32EnumAttr<"ReductionKind", "how a reduction combines",
    [I32EnumAttrCase<"Sum", 0, "sum">, I32EnumAttrCase<"Mean", 1, "mean">,
     I32EnumAttrCase<"Max", 2, "max">, I32EnumAttrCase<"Min", 3, "min">]> {
  let cppNamespace = "::mlir::tile";
}

#endif // TILE_DIALECT_TILE_IR_TILEDIALECT_TD
