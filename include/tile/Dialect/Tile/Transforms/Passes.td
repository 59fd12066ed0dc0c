//===- Passes.td - tile dialect transformation passes ------*- tablegen -*-===//

#ifndef TILE_DIALECT_TILE_TRANSFORMS_PASSES_TD
#define TILE_DIALECT_TILE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TileDifferentiatePass : Pass<"tile-differentiate", "::mlir::ModuleOp"> {
  let summary = "derives backward kernels by reverse-mode differentiation";
  let description = [{
    For every `tile.kernel` function `@f` (or those named in `functions`),
    adds `@f_bwd(primal inputs..., output cotangents...) -> input
    cotangents`: one result per differentiable argument (a float tensor not
    marked `tile.nograd`), in the argument's type.

    The backward recomputes the forward from the primal inputs and then
    applies, in reverse order, each op's derivative rule
    (DifferentiableOpInterface). Cotangents are f32; a value with several
    uses sums its contributions; an argument the outputs do not depend on
    gets zeros. Gradients of arguments broadcast over rows (RMSNorm's dW)
    come out of a `tile.reduce sum ... across_rows`.

    `policy=save-row-stats` lets a per-row value (O(rows), such as rstd) be
    saved instead of recomputed when the cost model says storing it is
    cheaper: `@f_fwd` then returns it as an extra f32 result and `@f_bwd`
    takes it as an argument. `tile.save` / `tile.recompute` on a forward op
    override the policy for that op's result. `main-grad` makes every
    cross-row gradient accumulate into an fp32 `main_grad` argument
    (`tile.reduce ... into`) instead of being returned fresh.
    `return-primal` makes `@f_bwd` also return the forward's results, which
    it recomputes anyway (`tile.primal`, after the gradients).

    Every derived argument and result carries its role (`tile.cotangent`,
    `tile.saved`, `tile.main_grad`, `tile.gradient`), so tools and the
    runtime can bind them without knowing the convention.

    Before:
    ```mlir
    func.func @square(%x: tensor<?xf32>) -> tensor<?xf32>
        attributes {tile.kernel} {
      %y = arith.mulf %x, %x : tensor<?xf32>
      return %y : tensor<?xf32>
    }
    ```
    After (`-tile-differentiate -canonicalize -cse`), in addition:
    ```mlir
    func.func @square_bwd(%x: tensor<?xf32>,
                          %dy: tensor<?xf32> {tile.cotangent = 0 : i64})
        -> (tensor<?xf32> {tile.gradient = 0 : i64})
        attributes {tile.backward_of = @square, tile.kernel} {
      %0 = arith.mulf %dy, %x : tensor<?xf32>
      %1 = arith.addf %0, %0 : tensor<?xf32>
      return %1 : tensor<?xf32>
    }
    ```
  }];
  let options = [
    Option<"policy", "policy", "::mlir::tile::RecomputePolicy",
           "::mlir::tile::RecomputePolicy::Recompute",
           "what the backward may keep from the forward",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tile::RecomputePolicy::Recompute, "recompute",
                        "recompute every intermediate from the inputs"),
             clEnumValN(::mlir::tile::RecomputePolicy::SaveRowStats,
                        "save-row-stats",
                        "save per-row values when the cost model favours it"))}]>,
    Option<"mainGrad", "main-grad", "bool", "false",
           "accumulate cross-row gradients into fp32 main_grad arguments">,
    Option<"rowWidthHint", "row-width-hint", "int64_t", "4096",
           "row width the cost model assumes where the width is dynamic">,
    Option<"returnPrimal", "return-primal", "bool", "false",
           "the backward also returns the forward's results (tile.primal), "
           "after the gradients">,
    ListOption<"functions", "functions", "std::string",
               "kernels to differentiate (default: every tile.kernel that is "
               "not itself derived)">
  ];
  let dependentDialects = [
    "::mlir::tile::TileDialect", "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect",
    "::mlir::func::FuncDialect"
  ];
}

def TileApproximateShiftedExponentialsPass
    : Pass<"tile-approximate-shifted-exponentials", "::mlir::ModuleOp"> {
  let summary = "lets a softmax's exp(x - max x) use the hardware's exp2";
  let description = [{
    Sets `fastmath<afn>` on every `math.exp` of `x - broadcast(max x)` in
    every `tile.kernel` (approximateShiftedExponentials: ex2.approx of
    d * log2 e, whose error no sum or quotient with that row can see);
    every other exponential keeps libdevice's accurate expf. Runs before
    `tile-differentiate`, whose backward clones the forward's exponentials
    with their marks (a saved row maximum would hide the pattern there),
    and in `tile-lower-to-ptx` before `convert-tile-to-gpu`. Idempotent.
  }];
}

def TileRowReciprocalsPass : Pass<"tile-row-reciprocals", "::mlir::ModuleOp"> {
  let summary = "divides by a row value as a multiply by its reciprocal";
  let description = [{
    Rewrites every f32 `a / tile.broadcast(r) [1]` (a row value) and
    `a / tile.splat(s)` of every `tile.kernel` as `a * (1 / r)`, the
    reciprocal taken once per row (per kernel) and shared by every division
    by the same value (multiplyByRowReciprocals: about 1 ulp instead of
    0.5; a kernel it would take past `max-ops` ops is left as it is).
    `tile-lower-to-ptx` runs it after `tile-schedule`, right before
    `convert-tile-to-gpu`.
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", "::mlir::tile::kMaxKernelOps",
           "leave a kernel the rewrite would take past this many ops">
  ];
}

def TileSchedulePass : Pass<"tile-schedule", "::mlir::ModuleOp"> {
  let summary = "chooses how each kernel is mapped onto the GPU";
  let description = [{
    Writes `tile.schedule` on every `tile.kernel` function: the threads per
    CTA, the grid, and the vector width (columns per thread and 16-byte
    access; rows that turn out misaligned at run time go scalar). A purely
    elementwise kernel gets `grid = "elements"` (a CTA per threads ×
    vector_width elements of its flattened tensors); one with only row
    reductions gets `grid = "rows"` (one CTA per row); one with a cross-row
    reduction gets a persistent grid of `ctas` CTAs, each accumulating the
    partials of its rows. convert-tile-to-gpu follows the attribute. Options override the
    choice for every kernel; without them an existing schedule is kept.
    `ctas` also makes a kernel with only row reductions persistent (for
    experiments: its resident body then loads one row ahead).

    ```mlir
    func.func @rms_norm_bwd(...) attributes {tile.kernel,
        tile.schedule = {ctas = 264 : i64, ctas_per_sm = 2 : i64,
                         grid = "persistent", threads = 256 : i64}}
    ```

    Persistent grids are sized for the device the options describe (an
    H100 SXM or H200 by default): `sms` times the CTAs per SM that 512
    threads make, within its threads, registers and shared memory per SM
    (the defaults are DeviceDescription's). The JIT passes the real
    device's figures. Its options (`sms`, `threads-per-sm`,
    `registers-per-sm`, `shared-bytes-per-sm`, and the schedule's
    overrides) are declared from one list each, DeviceFacts.def and
    ScheduleOptions.def, in the pass itself.
  }];
}

def TileSpecializeStoragePass
    : Pass<"tile-specialize-storage", "::mlir::ModuleOp"> {
  let summary = "changes every bf16/f16 tensor of the kernels to one type";
  let description = [{
    One kernel source serves every storage type: each bf16 or f16 tensor
    (arguments, results, values) becomes `dtype`; casts to f32 stay casts
    or fold. The JIT runs it for its `dtype` option.
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", "\"bf16\"",
           "the storage type: bf16, f16 or f32">
  ];
}

def TileSpecializeWidthsPass
    : Pass<"tile-specialize-widths", "::mlir::ModuleOp"> {
  let summary = "specializes every tile.kernel for widths of its arguments";
  let description = [{
    Sets `tile.specialize` on every tile.kernel: `w<i> = <width>` for each
    given argument `i` that the kernel has and that is a tensor. The
    lowering uses the widths as constants (the manifest requires them of
    the call). The JIT runs it for its `widths` option.
  }];
  let options = [
    ListOption<"widths", "widths", "std::string",
               "argument:width pairs, e.g. 0:4096,1:4096">
  ];
}

#endif // TILE_DIALECT_TILE_TRANSFORMS_PASSES_TD
