//===- TileOps.td - tile dialect operations -----------------*- tablegen -*-===//
//
// Operations of the tile dialect. Every op is pure and works on whole ranked
// tensors; the compiler, not the user, decides how they are tiled.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_IR_TILEOPS_TD
#define TILE_DIALECT_TILE_IR_TILEOPS_TD

include "tile/Dialect/Tile/IR/TileDialect.td"
include "tile/Dialect/Tile/IR/TileInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinTypes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/OpBase.td"

/// The storage element types a kernel may read and write.
def Tile_StorageFloat : AnyTypeOf<[BF16, F16, F32]>;
def Tile_FloatTensor : RankedTensorOf<[BF16, F16, F32]>;
/// Integer data a kernel reads but never differentiates (a loss's labels):
/// read through tile.cast to a float type, its only use.
def Tile_IntegerTensor : RankedTensorOf<[I32, I64]>;

/// Every tile op states its derivative rule (TileInterfaces.td).
class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic,
         !listconcat(traits,
                     [DeclareOpInterfaceMethods<Tile_DifferentiableOpInterface>])>;

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

def Tile_CastOp : Tile_Op<"cast", [Pure, SameOperandsAndResultShape]> {
  let summary = "converts between storage types";
  let description = [{
    Converts every element of `input` to the element type of the result,
    rounding to nearest even when narrowing (exactly as the GPU's `cvt.rn`).
    Kernels load `bf16`/`f16` data, cast it to `f32`, compute, and cast back.

    An `i32`/`i64` input (a loss's labels, an index per row) converts to a
    float as a signed integer; in `f32` every integer of magnitude up to
    2^24 is exact. This is how integer data enters the float math: it is
    the one op that may read an integer tensor, and no gradient flows
    through it to the integers.

    ```mlir
    %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
    %lf = tile.cast %labels : tensor<?xi64> to tensor<?xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Tile_FloatTensor, Tile_IntegerTensor]>:$input);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// IotaOp
//===----------------------------------------------------------------------===//

def Tile_IotaOp : Tile_Op<"iota", [Pure]> {
  let summary = "each element's index along the last dimension";
  let description = [{
    Produces a tensor with the shape of `shape` (whose element values are not
    read) in which every element is its index along the last dimension, as
    a float: in a `[rows, width]` tensor the column, 0 to width - 1. In `f32`
    the index is exact for widths up to 2^24.

    With `arith.cmpf` and `arith.select` it picks the element at a per-row
    column (a label's logit) or masks columns, in float math that the
    evaluator checks and the derivative rules differentiate. No gradient
    flows through it: its value does not depend on `shape`'s.

    ```mlir
    %col = tile.iota like %logits : tensor<?x?xf32> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$shape);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = [{
    `like` $shape attr-dict `:` type($shape) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// SplatOp
//===----------------------------------------------------------------------===//

def Tile_SplatOp : Tile_Op<"splat", [Pure]> {
  let summary = "fills a tensor shaped like another with one scalar";
  let description = [{
    Produces a tensor with the shape of `shape` (whose element values are not
    read) in which every element is `value`. This is how scalar parameters
    and constants meet tensors of dynamic shape.

    ```mlir
    %epsv = tile.splat %eps like %ms : f32, tensor<?xf32> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Tile_StorageFloat:$value, AnyRankedTensor:$shape);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = [{
    $value `like` $shape attr-dict `:` type($value) `,` type($shape) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

def Tile_BroadcastOp : Tile_Op<"broadcast", [Pure]> {
  let summary = "replicates a tensor along new dimensions";
  let description = [{
    Inserts the result dimensions listed in `dims` (strictly increasing) and
    replicates `input` along them. The result has the shape of `shape`, whose
    element values are not read; the remaining result dimensions correspond,
    in order, to the dimensions of `input`.

    ```mlir
    // rstd[i] for every column j: [M] -> [M, N]
    %rb = tile.broadcast %rstd [1] like %xf
        : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
    // w[j] for every row i: [N] -> [M, N]
    %wb = tile.broadcast %w [0] like %xf
        : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Tile_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       AnyRankedTensor:$shape);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = [{
    $input $dims `like` $shape attr-dict `:` type($input) `,` type($shape)
    `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

def Tile_ReduceOp : Tile_Op<"reduce", [Pure,
    OptionalTypesMatchWith<"the accumulator has the result type", "result",
                           "init", "$_self">]> {
  let summary = "reduces a tensor over chosen dimensions";
  let description = [{
    Combines the elements of `input` along the dimensions `dims` (strictly
    increasing) with `sum`, `mean`, `max` or `min`; those dimensions are
    removed from the result. Reducing every dimension gives a rank-0 tensor.
    A reduction over a leading (row) dimension combines different rows and
    must say so with `across_rows` (the verifier checks the spelling agrees
    with `dims`): the scheduler realizes it as per-CTA fp32 partials plus a
    deterministic finalize, a second kernel and a workspace, and the IR
    makes that cost visible. The differentiator emits such reductions for
    the gradients of weights broadcast over rows (RMSNorm's dW).

    With `into %acc` the result is `acc` combined with the reduction
    (`acc + Σ` for sum and mean, `max`/`min` otherwise): the form in which a
    gradient is accumulated into an existing fp32 buffer (`main_grad`)
    instead of being written fresh.

    ```mlir
    %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
    %dw = tile.reduce sum %p [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
    %mg = tile.reduce sum %p [0] across_rows into %main_grad
        : tensor<?x?xf32> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Tile_ReductionKind:$kind, Tile_FloatTensor:$input,
                       DenseI64ArrayAttr:$dims, UnitAttr:$across_rows,
                       Optional<Tile_FloatTensor>:$init);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = [{
    $kind $input $dims (`across_rows` $across_rows^)? (`into` $init^)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let builders = [
    // Sets `across_rows` from `dims` and infers the result type.
    OpBuilder<(ins "::mlir::tile::ReductionKind":$kind, "::mlir::Value":$input,
                   "::llvm::ArrayRef<int64_t>":$dims,
                   CArg<"::mlir::Value", "{}">:$init)>
  ];
  let extraClassDeclaration = [{
    /// Whether reducing `dims` of a rank-`rank` tensor combines different
    /// rows: every dimension but the last is a row (parallel) dimension.
    static bool crossesRows(::llvm::ArrayRef<int64_t> dims, int64_t rank);
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

def Tile_SliceOp : Tile_Op<"slice", [Pure]> {
  let summary = "takes a contiguous range of the last dimension";
  let description = [{
    Returns the elements `[offset, offset + size)` of the last dimension of
    `input`; the leading dimensions are kept. `offset` and `size` are `index`
    values, so a kernel can split a row it only knows at run time, such as the
    two halves of a `[M, 2H]` tensor. A range that leaves the row is an error
    (reported statically when the values are constants).

    ```mlir
    %a = tile.slice %x [%c0, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
    %b = tile.slice %x [%h, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
    ```
  }];
  let arguments = (ins Tile_FloatTensor:$input, Index:$offset, Index:$size);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = [{
    $input `[` $offset `,` $size `]` attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

def Tile_ConcatOp : Tile_Op<"concat", [Pure]> {
  let summary = "joins tensors along the last dimension";
  let description = [{
    Concatenates `inputs` along their last dimension; all other dimensions
    and the element type must agree.

    ```mlir
    %g = tile.concat %da, %db : tensor<?x?xbf16>, tensor<?x?xbf16>
        -> tensor<?x?xbf16>
    ```
  }];
  let arguments = (ins Variadic<Tile_FloatTensor>:$inputs);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// PadOp
//===----------------------------------------------------------------------===//

def Tile_PadOp : Tile_Op<"pad", [Pure]> {
  let summary = "places a tensor into a zero row range of a wider one";
  let description = [{
    The inverse of `tile.slice`: the result has the shape of `shape` (whose
    element values are not read) and the element type of `input`; along the
    last dimension it holds `input` at `[offset, offset + width(input))` and
    zeros everywhere else. The leading dimensions of `input` and `shape`
    agree. It is the adjoint of a slice, and how the gradient of a row half
    reaches the full row.

    ```mlir
    %g = tile.pad %db [%h] like %x
        : tensor<?x?xf32>, tensor<?x?xbf16> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Tile_FloatTensor:$input, Index:$offset,
                       AnyRankedTensor:$shape);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = [{
    $input `[` $offset `]` `like` $shape attr-dict `:` type($input) `,`
    type($shape) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// RepeatOp
//===----------------------------------------------------------------------===//

def Tile_RepeatOp : Tile_Op<"repeat", [Pure]> {
  let summary = "repeats the last dimension to the width of another tensor";
  let description = [{
    The result has the shape of `shape` (whose element values are not read)
    and the element type of `input`; element `c` of a row is element
    `c mod width(input)` of the input's row. The leading dimensions of
    `input` and `shape` agree, and the input's width divides the result's
    (checked statically where both are constants, at launch otherwise).
    It is how a per-position table meets a row of several heads: RoPE's
    `cos [S, D]` against `q [S, heads·D]`.

    Gradients do not flow through the repeated operand (its adjoint would
    sum the repeats); tile-differentiate says so where one would.

    ```mlir
    %c = tile.repeat %cos like %q
        : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Tile_FloatTensor:$input, AnyRankedTensor:$shape);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = [{
    $input `like` $shape attr-dict `:` type($input) `,` type($shape) `->`
    type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// SwapHalvesOp
//===----------------------------------------------------------------------===//

def Tile_SwapHalvesOp : Tile_Op<"swap_halves",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "swaps the two halves of every block of the last dimension";
  let description = [{
    The last dimension is cut into blocks of `block` columns (an even
    `index` value that divides the width); in every block the first and the
    second half trade places: column `c` of the result is column
    `c + block/2` of the input in a block's first half and `c - block/2` in
    its second. Its own adjoint. With the per-column signs folded into a
    table, it is RoPE's `rotate_half` (block = the head dimension, the
    GPT-NeoX layout) or the interleaved form (block = 2, GPT-J).

    ```mlir
    %r = tile.swap_halves %q [%d] : tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Tile_FloatTensor:$input, Index:$block);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = "$input `[` $block `]` attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// SigmoidOp
//===----------------------------------------------------------------------===//

def Tile_SigmoidOp : Tile_Op<"sigmoid",
    [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "logistic sigmoid 1 / (1 + exp(-x)), elementwise";
  let description = [{
    The logistic function, which upstream `math` lacks. A dedicated op keeps
    SiLU and its derivative, σ(x)·(1 + x·(1 − σ(x))), short and stable.

    ```mlir
    %s = tile.sigmoid %af : tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Tile_FloatTensor:$input);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// StopGradientOp
//===----------------------------------------------------------------------===//

def Tile_StopGradientOp : Tile_Op<"stop_gradient",
    [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "its input's value, with no gradient flowing through it";
  let description = [{
    The identity in the forward; the differentiator gives its input no
    cotangent from it (PyTorch's `detach`). For a value whose gradient
    cancels exactly, such as the maximum a logsumexp subtracts for
    stability (lse = m + log(sum(exp(x - m))) does not depend on m), it
    says so: the derived backward then needs no reduction over the row to
    compute a zero.

    ```mlir
    %m = tile.stop_gradient %max : tensor<?xf32>
    ```
  }];
  let arguments = (ins Tile_FloatTensor:$input);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// ContractOp
//===----------------------------------------------------------------------===//

def Tile_ContractOp : Tile_Op<"contract", [Pure]> {
  let summary = "multiplies a row tile by a matrix: a projection";
  let description = [{
    With `over 1`, `result[r, n] = Σ_k input[r, k] · matrix[n, k]`: the
    input times the transpose of a matrix laid out as a PyTorch Linear's
    weight, `[out, in]`. With `over 0`, `Σ_k input[r, k] · matrix[k, n]`:
    the input times the matrix, the form the input's gradient takes.
    `input` is a row tile `[rows, K]`; `matrix` is meant to be a weight, a
    kernel argument whose two dimensions are its own (neither is the rows:
    the GPU lowering will hold it to that; the evaluator takes any value).
    Both have one element type, `bf16`, `f16` or
    `f32`, the tensor cores' inputs; the result is `f32`, their
    accumulator, and every op may read it: a kernel says "project, then
    silu_and_mul", or "project to the vocabulary, then cross-entropy
    against the label".

    Its derivative: `d input = g · matrix` (a contraction over the other
    dimension) and `d matrix = gᵀ · input`, a sum over the rows
    (`tile.contract_rows`) that a `main_grad` absorbs as it does a
    cross-row `tile.reduce`. The cotangent is rounded to the operands'
    element type first, as the backward's GEMMs read it (PyTorch's, too).

    ```mlir
    %y = tile.contract %x, %w over 1
        : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Tile_FloatTensor:$input, Tile_FloatTensor:$matrix,
                       I64Attr:$over);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $matrix `over` $over attr-dict `:` type($input) `,`
    type($matrix) `->` type($result)
  }];
  let builders = [
    // Infers the result type: [the input's rows, the matrix's other
    // dimension] in f32.
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$matrix,
                   "int64_t":$over)>
  ];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ContractRowsOp
//===----------------------------------------------------------------------===//

def Tile_ContractRowsOp : Tile_Op<"contract_rows", [Pure,
    OptionalTypesMatchWith<"the accumulator has the result type", "result",
                           "init", "$_self">]> {
  let summary = "sums the rows' outer products: a projection's weight gradient";
  let description = [{
    `result[p, q] = Σ_r left[r, p] · right[r, q]`, over the rows of two row
    tiles of one element type (`bf16`, `f16` or `f32`), in `f32`: a
    `[width(left), width(right)]` matrix, `leftᵀ · right`. It combines
    every row, so its spelling says `across_rows`, as a cross-row
    `tile.reduce` does; the differentiator makes it for a contraction's
    matrix (`d matrix = gᵀ · input`). With `into %acc` the result is
    `acc + Σ`: the form in which the gradient is added to a `main_grad`.

    ```mlir
    %dw = tile.contract_rows %g, %x across_rows
        : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Tile_FloatTensor:$left, Tile_FloatTensor:$right,
                       Optional<Tile_FloatTensor>:$init);
  let results = (outs Tile_FloatTensor:$result);
  let assemblyFormat = [{
    $left `,` $right `across_rows` (`into` $init^)? attr-dict `:`
    type($left) `,` type($right) `->` type($result)
  }];
  let builders = [
    // Infers the result type: [width(left), width(right)] in f32.
    OpBuilder<(ins "::mlir::Value":$left, "::mlir::Value":$right,
                   CArg<"::mlir::Value", "{}">:$init)>
  ];
  let hasVerifier = 1;
}

#endif // TILE_DIALECT_TILE_IR_TILEOPS_TD
