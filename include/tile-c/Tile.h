/*===- tile-c/Tile.h - Tile's C API -------------------------------*- C -*-===*\
|*                                                                            *|
|* The stable boundary of libtile.so: compile a tile kernel (and derive its   *|
|* backward), describe its functions, work out a call's result shapes and     *|
|* workspace, launch it on a caller's stream and device with a caller's       *|
|* workspace, or evaluate it on the host in float64. No C++ type or           *|
|* exception crosses it; everything is an opaque handle, a plain struct or a  *|
|* scalar. Every call that can fail returns a tile_status: NULL on success,   *|
|* else an error whose message says what is wrong (the caller destroys it).   *|
|*                                                                            *|
|* Handles may be used from several threads; a module's launch and            *|
|* evaluation are thread-safe.                                                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TILE_C_TILE_H
#define TILE_C_TILE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define TILE_C_EXPORT __attribute__((visibility("default")))
#else
#define TILE_C_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a struct or a signature below changes or a function is
   added. */
#define TILE_C_API_VERSION 12
TILE_C_EXPORT int tile_api_version(void);

/*===-- Status ------------------------------------------------------------===*/

typedef struct tile_status_t *tile_status; /* NULL: success */
TILE_C_EXPORT const char *tile_status_message(tile_status status);
TILE_C_EXPORT void tile_status_destroy(tile_status status);

/*===-- Values ------------------------------------------------------------===*/

typedef enum {
  TILE_DTYPE_BF16 = 0,
  TILE_DTYPE_F16 = 1,
  TILE_DTYPE_F32 = 2,
  /* Host evaluation only. */
  TILE_DTYPE_F64 = 3,
  /* Integer data (labels): a kernel's i64 / i32 tensor arguments on the
     GPU, and a kernel signature's integer scalars and tensors. */
  TILE_DTYPE_I64 = 4,
  TILE_DTYPE_I32 = 5,
} tile_dtype;

/* A tensor: device memory for launches, host float64 for evaluation.
   `strides` are in elements; NULL means dense row-major. */
typedef struct {
  void *data;
  const int64_t *shape;
  const int64_t *strides;
  int32_t rank;
  tile_dtype dtype;
} tile_tensor;

typedef enum {
  TILE_VALUE_TENSOR = 0,
  TILE_VALUE_FLOAT = 1, /* an f32 (or f64) scalar argument */
  TILE_VALUE_INT = 2,   /* an integer scalar argument */
} tile_value_kind;

/* One argument of a call. */
typedef struct {
  tile_value_kind kind;
  tile_tensor tensor;
  double scalar;
  int64_t integer;
} tile_value;

/*===-- Devices -----------------------------------------------------------===*/

/* How many GPUs the driver sees; an error where there is no driver. */
TILE_C_EXPORT tile_status tile_device_count(int *count);
/* The chip kernels for device `ordinal` are compiled for ("sm_90a"),
   written NUL-terminated into `buffer`. */
TILE_C_EXPORT tile_status tile_device_chip(int ordinal, char *buffer,
                                           size_t size);

/* The figures persistent grids are sized by. All zero in
   tile_compile_options: an H100 SXM's or H200's (132 SMs). */
typedef struct {
  int64_t multiprocessors;
  int64_t threads_per_sm;
  int64_t registers_per_sm;
  int64_t shared_bytes_per_sm;
} tile_device_description;

/* Device `ordinal`'s description, as the driver reports it. */
TILE_C_EXPORT tile_status
tile_device_describe(int ordinal, tile_device_description *description);

/*===-- Compiling ---------------------------------------------------------===*/

typedef struct {
  /* Target chip ("sm_90a"); NULL or "" compiles for the host only:
     describe, infer and evaluate, but no launch. */
  const char *chip;
  /* NULL/"", or "bf16"/"f16"/"f32": the type every bf16/f16 tensor of the
     source becomes. */
  const char *dtype;
  /* Also derive the backward functions (`<name>_bwd`, and `<name>_fwd`
     under the save-row-stats policy). */
  int differentiate;
  /* NULL or "recompute", or "save-row-stats". */
  const char *policy;
  /* Cross-row gradients accumulate into fp32 main_grad arguments. */
  int main_grad;
  /* widths[i] > 0 specializes tensor argument i's last dimension (of every
     function: derived ones share their leading arguments). */
  const int64_t *widths;
  size_t num_widths;
  /* The name diagnostics give the source (a path); NULL: "kernel". */
  const char *source_name;
  /* The disk cache: NULL for the default, "none" for no disk cache. */
  const char *cache_dir;
  /* The GPU the kernels will run on (tile_device_describe); all zero: an
     H100 SXM or H200. Only the size of persistent grids depends on it. */
  tile_device_description device;
} tile_compile_options;

TILE_C_EXPORT void tile_compile_options_init(tile_compile_options *options);

typedef struct tile_module_t *tile_module;
typedef struct tile_function_t *tile_function;

/* Parses, verifies, derives and (with a chip) lowers `source` to PTX. A
   source that does not verify fails with `name:line:col: error: ...`. */
TILE_C_EXPORT tile_status
tile_module_compile(const char *source, size_t length,
                    const tile_compile_options *options, tile_module *module);
TILE_C_EXPORT void tile_module_destroy(tile_module module);
/* The PTX ("" for a host module), the launch manifest (JSON) and the derived
   tile IR; valid while the module lives. */
TILE_C_EXPORT const char *tile_module_ptx(tile_module module);
TILE_C_EXPORT const char *tile_module_manifest(tile_module module);
TILE_C_EXPORT const char *tile_module_ir(tile_module module);

/*===-- Describing --------------------------------------------------------===*/

TILE_C_EXPORT size_t tile_module_num_functions(tile_module module);
/* Functions are owned by their module. */
TILE_C_EXPORT tile_function tile_module_function(tile_module module,
                                                 size_t index);
TILE_C_EXPORT tile_status tile_module_lookup(tile_module module,
                                             const char *name,
                                             tile_function *function);

typedef enum {
  TILE_ROLE_INPUT = 0,          /* a forward input */
  TILE_ROLE_COTANGENT = 1,      /* a backward's incoming gradient */
  TILE_ROLE_SAVED = 2,          /* a value the forward saved (save-row-stats) */
  TILE_ROLE_MAIN_GRAD = 3,      /* an fp32 accumulator, read and written */
  TILE_ROLE_OUTPUT = 4,         /* a forward result */
  TILE_ROLE_GRADIENT = 5,       /* a backward result */
  TILE_ROLE_PRIMAL = 6,         /* a backward's copy of a forward result */
  TILE_ROLE_FORWARD_RESULT = 7, /* a backward's argument: a forward result
                                   it reads instead of recomputing it */
} tile_role;

typedef struct {
  int is_tensor;
  tile_dtype dtype;
  int32_t rank;
  tile_role role;
  /* An input that gets a gradient (not tile.nograd, a float tensor). */
  int differentiable;
  /* The forward argument a gradient or main_grad belongs to, the forward
     result a cotangent or a forward_result argument belongs to, the saved
     value's number; else -1. */
  int64_t of;
  /* An argument whose elements the function reads (since version 9). 0: it
     uses only the shape, or nothing, so a caller may pass any tensor of
     that shape and dtype (a backward that never reads an input: softmax's
     reads its output instead). Results: 0. */
  int reads_data;
} tile_value_info;

TILE_C_EXPORT const char *tile_function_name(tile_function function);
TILE_C_EXPORT size_t tile_function_num_arguments(tile_function function);
TILE_C_EXPORT size_t tile_function_num_results(tile_function function);
TILE_C_EXPORT tile_value_info tile_function_argument(tile_function function,
                                                     size_t index);
TILE_C_EXPORT tile_value_info tile_function_result(tile_function function,
                                                   size_t index);
/* The flattened shape of argument (result = 0) or result (result = 1)
   `index` as the launch rules write it (since version 12): dimension
   `dim`'s expression, or NULL past its last dimension, for a scalar or an
   index out of range. A [rows, width] buffer's leading dimensions flatten
   into `rows`. The expressions are over `rows`, `w<i>` (argument i's
   width: its last dimension) and `arg<i>` (integer argument i's value),
   in integers, + - * / % (C's division), parentheses, min(a, b),
   max(a, b) and ceildiv(a, b); each symbol is bound by the first
   argument dimension, in argument order, whose whole expression it is.
   tile_function_infer evaluates the same expressions; a caller with
   symbolic sizes (a tracing framework) evaluates them itself. Owned by
   the function. */
TILE_C_EXPORT const char *tile_function_shape(tile_function function,
                                              int result, size_t index,
                                              size_t dim);
/* For a derived function, the kernel it was derived from; else NULL. */
TILE_C_EXPORT const char *tile_function_backward_of(tile_function function);
TILE_C_EXPORT const char *tile_function_forward_of(tile_function function);

/*===-- Calling -----------------------------------------------------------===*/

/* What a call on `args` produces, from the arguments' shapes alone (their
   pointers are not read): result i's flattened shape in
   result_shapes[2 * i ..] with its rank in result_ranks[i] (arrays of
   tile_function_num_results entries), and the workspace bytes a launch
   needs (0: none). Checks dtypes, ranks and the shape constraints. */
TILE_C_EXPORT tile_status tile_function_infer(
    tile_function function, const tile_value *args, size_t num_args,
    int64_t *result_shapes, int32_t *result_ranks, size_t *workspace_bytes);

/* Launches `function` on GPU `device` (an ordinal), on `stream` (a
   CUstream of that device; NULL: its default stream), writing `results`.
   `workspace` is device memory of `workspace_bytes` >= what infer said,
   16-byte aligned (NULL where it said 0). Asynchronous: no allocation, no
   synchronization. Every tensor is checked first; on any error nothing is
   launched. The first launch on a device loads the module there. */
TILE_C_EXPORT tile_status tile_function_launch(
    tile_function function, int device, void *stream, const tile_value *args,
    size_t num_args, const tile_tensor *results, size_t num_results,
    void *workspace, size_t workspace_bytes);

/* Host results of an evaluation. */
typedef struct tile_host_results_t *tile_host_results;

/* Evaluates `function` on the host in float64 (tile::interp): tensor
   arguments are host TILE_DTYPE_F64 buffers (dense). With `exact` nonzero
   nothing is rounded (casts are identities); otherwise values round where
   the GPU rounds (storage types, casts). */
TILE_C_EXPORT tile_status tile_function_evaluate(tile_function function,
                                                 const tile_value *args,
                                                 size_t num_args, int exact,
                                                 tile_host_results *results);
TILE_C_EXPORT size_t tile_host_results_count(tile_host_results results);
TILE_C_EXPORT int32_t tile_host_results_rank(tile_host_results results,
                                             size_t index);
TILE_C_EXPORT const int64_t *tile_host_results_shape(tile_host_results results,
                                                     size_t index);
TILE_C_EXPORT const double *tile_host_results_data(tile_host_results results,
                                                   size_t index);
TILE_C_EXPORT void tile_host_results_destroy(tile_host_results results);

/*===-- Operators ---------------------------------------------------------===*/

/* The operators' names, index 0, 1, ... ("swiglu", "silu_and_mul",
   "rms_norm", "geglu", "rope"); NULL past the last. */
TILE_C_EXPORT const char *tile_operator_name(size_t index);
/* The source of an operator's kernel (examples/<name>.mlir, embedded);
   NULL for a name that is not an operator's. */
TILE_C_EXPORT const char *tile_operator_source(const char *name);

/* The operators of tile::ops on one device (the GEMM and the MLP below),
   each compiled for the call's dtype and widths on first use. Tensors are
   dense device memory; every call checks them and launches on `stream`.
   `workspace` as for launch; NULL lets the operators keep their own (allocated
   on first use: not for CUDA-graph capture). */
typedef struct tile_operators_t *tile_operators;
TILE_C_EXPORT tile_status tile_operators_create(int device,
                                                const char *cache_dir,
                                                tile_operators *operators);
TILE_C_EXPORT void tile_operators_destroy(tile_operators operators);

typedef struct {
  void *stream;
  void *workspace;
  size_t workspace_bytes;
  /* Memory only this call uses (NULL: none), apart from a workspace the
     caller keeps until a later call: the untiled MLP's (recompute 0)
     workspace then holds only its kept buffers (tile_mlp_workspace_layout's
     kept_buffers), the scratch the rest. */
  void *scratch;
  size_t scratch_bytes;
} tile_run;

/*===-- GEMM --------------------------------------------------------------===*/

/* d = op(a)·op(b) + beta·d through cuBLASLt with fp32 accumulation, all
   row-major and dense: a and b 2-D in bf16, f16 or f32 (op transposes where
   trans_* is non-zero), d in their dtype or f32 — a weight gradient added
   straight into an fp32 main_grad is beta = 1. beta = 0 never reads d.
   run->workspace, where given, holds TILE_MATMUL_WORKSPACE_BYTES and is
   256-byte aligned; NULL lets the operators keep one. */
#define TILE_MATMUL_WORKSPACE_BYTES (32u << 20)
TILE_C_EXPORT tile_status tile_matmul(tile_operators ops, const tile_run *run,
                                      const tile_tensor *a, int trans_a,
                                      const tile_tensor *b, int trans_b,
                                      const tile_tensor *d, float beta);

/*===-- The SwiGLU MLP, dense or grouped ----------------------------------===*/

/* y[rows of e] = (silu(x_e·gate_eᵀ) ⊙ (x_e·up_eᵀ))·down_eᵀ for E experts
   (tile::ops::GroupedSwiGLUMLP): x [T, H] holds the tokens grouped by
   expert, splits[e] rows for expert e (E host integers, each ≥ 0, summing
   to T: TransformerEngine's m_splits; splits on the device must be copied
   to the host first, which waits for the stream). The dense MLP is one
   expert: splits = {T}, the weights [1, I, H] views of [I, H] ones.

   Weights are stacked: gate and up [E, I, H], down [E, H, I]; or, with up
   NULL, gate is Hugging Face's fused gate_up [E, 2I, H] (each expert's
   gate rows first). The rows are split into shards and nothing of size
   [rows, I] is kept; the backward recomputes gate/up per shard and
   accumulates the weight gradients in fp32 into main_grad buffers by GEMMs
   with beta = 1, stacked as the weights (main_grad_up NULL with a fused
   main_grad_gate). An expert with no tokens gets zero gradients. The GEMMs
   (cuBLASLt) and kernels of a call run in order on run->stream; with
   run->workspace (tile_mlp_plan's bytes, 256-byte aligned) nothing is
   allocated, else the MLP keeps its own. A tile_mlp uses its
   tile_operators (destroy it first) and one thread at a time. */
typedef struct tile_mlp_t *tile_mlp;
typedef struct {
  int64_t shards;       /* 0: the fewest whose workspace fits memory_budget */
  size_t memory_budget; /* bytes for the shards' workspace; 0: 1 GiB */
  /* 0: the untiled step (one shard; the forward keeps g, u and h in the
     workspace for the backward of the same x, which then recomputes
     nothing) — the baseline the tiled step is measured against. */
  int recompute;
  /* How many streams the experts' GEMMs spread over, each with its own
     cuBLASLt workspace (tile_mlp_plan counts them); 0: the default, 4; 1:
     all on run->stream. One expert uses one. */
  int streams;
} tile_mlp_options;
/* How a step of `rows` rows and `experts` experts splits under `options`
   (NULL: the defaults), and the workspace it needs: g, u and h of a shard
   and one cuBLASLt workspace per GEMM stream. Host only: no GPU, no
   tile_mlp. */
TILE_C_EXPORT tile_status tile_mlp_plan(const tile_mlp_options *options,
                                        int64_t rows, int64_t intermediate,
                                        int64_t experts, tile_dtype dtype,
                                        int64_t *shards,
                                        int64_t *rows_per_shard,
                                        size_t *workspace_bytes);
/* The layout behind tile_mlp_plan's workspace bytes, as a function of a
   shard's rows: fixed_bytes (the cuBLASLt workspaces), then `buffers`
   buffers of row_bytes a row, each rounded up to `alignment`:
     workspace_bytes = fixed_bytes
                       + buffers * round_up(rows_per_shard * row_bytes,
                                            alignment).
   The untiled step (recompute 0) is one shard of all its rows, so its
   workspace is that of rows_per_shard = rows: a caller can size it for a
   row count it does not know yet (torch.compile's symbolic shapes). Its
   forward keeps the first kept_buffers buffers for its backward; with
   run->scratch given, the workspace holds only those and the scratch
   fixed_bytes and the other buffers (freed between the calls). Host
   only. */
TILE_C_EXPORT tile_status tile_mlp_workspace_layout(
    const tile_mlp_options *options, int64_t intermediate, int64_t experts,
    tile_dtype dtype, size_t *fixed_bytes, int64_t *buffers, size_t *row_bytes,
    size_t *alignment, int64_t *kept_buffers);
/* NULL options: recompute, automatic shards, 1 GiB, the default streams. */
TILE_C_EXPORT tile_status tile_mlp_create(tile_operators ops,
                                          const tile_mlp_options *options,
                                          tile_mlp *mlp);
TILE_C_EXPORT void tile_mlp_destroy(tile_mlp mlp);
TILE_C_EXPORT tile_status tile_mlp_forward(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate,
    const tile_tensor *up, const tile_tensor *down, const tile_tensor *x,
    const int64_t *splits, int64_t experts, const tile_tensor *y);
/* dx from dy; main_grad_* (fp32, stacked as the weights) are overwritten
   when `overwrite` is non-zero (the first micro-batch), else added to.
   An overwrite call of the untiled step (recompute = 0) may take them in
   the weights' dtype instead (written once, rounded from fp32). */
TILE_C_EXPORT tile_status tile_mlp_backward(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate,
    const tile_tensor *up, const tile_tensor *down, const tile_tensor *x,
    const int64_t *splits, int64_t experts, const tile_tensor *dy,
    const tile_tensor *dx, const tile_tensor *main_grad_gate,
    const tile_tensor *main_grad_up, const tile_tensor *main_grad_down,
    int overwrite);
/* The same steps with the splits on the device: `splits` an [E] int32 or
   int64 tensor (a router's counts). On compute capability 9.0 with bf16
   and H, I multiples of 8 the GPU alone reads them: each phase's GEMMs are
   one grouped GEMM over every expert (CUTLASS), nothing in the step waits
   for the GPU, and the step can be captured in a CUDA graph; counts that
   do not sum to T stop the step's kernel with a message (a device-side
   assert). Elsewhere they are copied to the host first (waiting for
   run->stream) and the step is tile_mlp_forward's. */
TILE_C_EXPORT tile_status tile_mlp_forward_device_splits(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate,
    const tile_tensor *up, const tile_tensor *down, const tile_tensor *x,
    const tile_tensor *splits, const tile_tensor *y);
TILE_C_EXPORT tile_status tile_mlp_backward_device_splits(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate,
    const tile_tensor *up, const tile_tensor *down, const tile_tensor *x,
    const tile_tensor *splits, const tile_tensor *dy, const tile_tensor *dx,
    const tile_tensor *main_grad_gate, const tile_tensor *main_grad_up,
    const tile_tensor *main_grad_down, int overwrite);
/* A mixture of experts' step as its router leaves it: the device-splits
   step of a fused gate_up [E, 2I, H] and down [E, H, I], with routing [T]
   (fp32, x's device) each row's routing weight, applied to h before the
   down projection: y[t] = routing[t] · mlp(x[t]), so the weighted sum over
   a token's experts is a plain sum of y's rows and the weights' gradient
   needs nothing of width H kept. y may be x's buffer. The backward
   overwrites d_routing [T] (fp32) with ⟨dy[t], mlp(x[t])⟩; dx may be dy's
   buffer. */
TILE_C_EXPORT tile_status tile_mlp_forward_routed(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate_up,
    const tile_tensor *down, const tile_tensor *x, const tile_tensor *splits,
    const tile_tensor *routing, const tile_tensor *y);
TILE_C_EXPORT tile_status tile_mlp_backward_routed(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate_up,
    const tile_tensor *down, const tile_tensor *x, const tile_tensor *splits,
    const tile_tensor *routing, const tile_tensor *dy, const tile_tensor *dx,
    const tile_tensor *d_routing, const tile_tensor *main_grad_gate_up,
    const tile_tensor *main_grad_down, int overwrite);
/* The untiled routed backward (recompute = 0) in two calls, for a caller
   that makes x's rows only once dy is spent (gathering them into dy's
   buffer: the step then never holds both). _down reads dy: down's
   main_grad, d_routing, and [dg du] kept in the workspace; _gate_up, next,
   reads x and writes dx (dx may be x's buffer: each row's x is read before
   its dx is written): gate_up's main_grad. Both take the same main_grad
   tensors, overwrite and workspace as tile_mlp_backward_routed. */
TILE_C_EXPORT tile_status tile_mlp_backward_routed_down(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate_up,
    const tile_tensor *down, const tile_tensor *splits,
    const tile_tensor *routing, const tile_tensor *dy,
    const tile_tensor *d_routing, const tile_tensor *main_grad_gate_up,
    const tile_tensor *main_grad_down, int overwrite);
TILE_C_EXPORT tile_status tile_mlp_backward_routed_gate_up(
    tile_mlp mlp, const tile_run *run, const tile_tensor *gate_up,
    const tile_tensor *down, const tile_tensor *x, const tile_tensor *splits,
    const tile_tensor *dx, const tile_tensor *main_grad_gate_up,
    const tile_tensor *main_grad_down, int overwrite);

#ifdef __cplusplus
}
#endif

#endif /* TILE_C_TILE_H */
