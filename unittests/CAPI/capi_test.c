/*===- capi_test.c - the C API, from C ------------------------------------===*\
|*                                                                            *|
|* Compiled as C (not C++) against libtile.so, as a C user would: compiles    *|
|* RMSNorm with its derived backward for the host, describes it, infers       *|
|* shapes, evaluates it in float64 against a reference computed here, and     *|
|* checks that bad input gets a message and no crash. Where a GPU is          *|
|* present it also launches the forward and compares.                         *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "tile-c/Tile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,         \
              #condition);                                                     \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* Succeeds, or prints the status and counts a failure. */
static int ok(tile_status status, const char *what) {
  if (!status)
    return 1;
  fprintf(stderr, "%s failed: %s\n", what, tile_status_message(status));
  tile_status_destroy(status);
  ++failures;
  return 0;
}

/* Fails with a message containing `needle`. */
static void fails_with(tile_status status, const char *needle,
                       const char *what) {
  if (!status) {
    fprintf(stderr, "%s succeeded; expected an error with '%s'\n", what,
            needle);
    ++failures;
    return;
  }
  if (!strstr(tile_status_message(status), needle)) {
    fprintf(stderr, "%s: '%s' does not contain '%s'\n", what,
            tile_status_message(status), needle);
    ++failures;
  }
  tile_status_destroy(status);
}

static tile_value tensor(void *data, const int64_t *shape, int32_t rank,
                         tile_dtype dtype) {
  tile_value value;
  memset(&value, 0, sizeof(value));
  value.kind = TILE_VALUE_TENSOR;
  value.tensor.data = data;
  value.tensor.shape = shape;
  value.tensor.rank = rank;
  value.tensor.dtype = dtype;
  return value;
}

static tile_value scalar(double x) {
  tile_value value;
  memset(&value, 0, sizeof(value));
  value.kind = TILE_VALUE_FLOAT;
  value.scalar = x;
  return value;
}

static void test_describe_infer_evaluate(void) {
  const char *source = tile_operator_source("rms_norm");
  CHECK(source != NULL);
  CHECK(tile_operator_source("no_such_operator") == NULL);
  tile_compile_options options;
  tile_compile_options_init(&options);
  options.differentiate = 1;
  options.cache_dir = "none";
  tile_module module = NULL;
  if (!ok(tile_module_compile(source, strlen(source), &options, &module),
          "compile rms_norm"))
    return;
  CHECK(strcmp(tile_module_ptx(module), "") == 0); /* host only */
  CHECK(tile_module_num_functions(module) == 2);

  tile_function forward = NULL, backward = NULL;
  ok(tile_module_lookup(module, "rms_norm", &forward), "lookup rms_norm");
  ok(tile_module_lookup(module, "rms_norm_bwd", &backward), "lookup bwd");
  fails_with(tile_module_lookup(module, "nope", &forward), "rms_norm_bwd",
             "lookup of a missing function lists the functions");
  CHECK(tile_function_num_arguments(forward) == 4);
  CHECK(tile_function_num_results(forward) == 1);
  CHECK(tile_function_backward_of(forward) == NULL);
  CHECK(strcmp(tile_function_backward_of(backward), "rms_norm") == 0);
  tile_value_info x = tile_function_argument(forward, 0);
  CHECK(x.is_tensor && x.rank == 2 && x.dtype == TILE_DTYPE_BF16);
  CHECK(x.differentiable && x.role == TILE_ROLE_INPUT && x.reads_data);
  CHECK(!tile_function_result(forward, 0).reads_data);
  tile_value_info eps = tile_function_argument(forward, 2);
  CHECK(!eps.is_tensor && !eps.differentiable && eps.dtype == TILE_DTYPE_F32);
  tile_value_info dy = tile_function_argument(backward, 4);
  CHECK(dy.role == TILE_ROLE_COTANGENT && dy.of == 0);
  tile_value_info dw = tile_function_result(backward, 1);
  CHECK(dw.role == TILE_ROLE_GRADIENT && dw.of == 1 && dw.rank == 1);

  /* The shapes as expressions: x [rows, w0], the weight [w1], eps a
     scalar; the backward's dW [w1] is no row-sized result. */
  CHECK(strcmp(tile_function_shape(forward, 0, 0, 0), "rows") == 0);
  CHECK(strcmp(tile_function_shape(forward, 0, 0, 1), "w0") == 0);
  CHECK(tile_function_shape(forward, 0, 0, 2) == NULL);
  CHECK(strcmp(tile_function_shape(forward, 0, 1, 0), "w1") == 0);
  CHECK(tile_function_shape(forward, 0, 2, 0) == NULL);
  CHECK(strcmp(tile_function_shape(forward, 1, 0, 0), "rows") == 0);
  CHECK(tile_function_shape(forward, 1, 1, 0) == NULL);
  /* dW: the width of dy (argument 4), not the rows. */
  CHECK(tile_function_shape(backward, 1, 1, 0) != NULL &&
        strcmp(tile_function_shape(backward, 1, 1, 0), "w4") == 0);
  CHECK(tile_function_shape(NULL, 1, 0, 0) == NULL);

  /* infer: shapes from the arguments alone (no storage). */
  int64_t xs[2] = {6, 8}, ws[1] = {8}, bad[1] = {7};
  tile_value args[5] = {tensor(NULL, xs, 2, TILE_DTYPE_BF16),
                        tensor(NULL, ws, 1, TILE_DTYPE_BF16), scalar(1e-6),
                        scalar(0.0), tensor(NULL, xs, 2, TILE_DTYPE_BF16)};
  int64_t shapes[4] = {0, 0, 0, 0};
  int32_t ranks[2] = {0, 0};
  size_t workspace = 1;
  if (ok(tile_function_infer(forward, args, 4, shapes, ranks, &workspace),
         "infer rms_norm")) {
    CHECK(ranks[0] == 2 && shapes[0] == 6 && shapes[1] == 8);
    CHECK(workspace == 0);
  }
  if (ok(tile_function_infer(backward, args, 5, shapes, ranks, &workspace),
         "infer rms_norm_bwd")) {
    CHECK(ranks[0] == 2 && shapes[0] == 6 && shapes[1] == 8);
    CHECK(ranks[1] == 1 && shapes[2] == 8);
    CHECK(workspace > 0); /* the cross-row partials of dW */
  }
  args[1] = tensor(NULL, bad, 1, TILE_DTYPE_BF16);
  fails_with(tile_function_infer(forward, args, 4, shapes, ranks, &workspace),
             "w1 == w0", "a weight of the wrong width");
  args[1] = tensor(NULL, ws, 1, TILE_DTYPE_F16);
  fails_with(tile_function_infer(forward, args, 4, shapes, ranks, &workspace),
             "dtype f16, expected bf16", "a weight of the wrong dtype");

  /* evaluate, exactly, against the formula. */
  double xv[48], wv[8];
  for (int i = 0; i < 48; ++i)
    xv[i] = sin(0.37 * i) * 2.0;
  for (int i = 0; i < 8; ++i)
    wv[i] = 0.5 + 0.1 * i;
  tile_value host[4] = {tensor(xv, xs, 2, TILE_DTYPE_F64),
                        tensor(wv, ws, 1, TILE_DTYPE_F64), scalar(1e-6),
                        scalar(1.0)};
  tile_host_results results = NULL;
  if (ok(tile_function_evaluate(forward, host, 4, /*exact=*/1, &results),
         "evaluate rms_norm")) {
    CHECK(tile_host_results_count(results) == 1);
    CHECK(tile_host_results_rank(results, 0) == 2);
    const double *y = tile_host_results_data(results, 0);
    double worst = 0;
    for (int r = 0; r < 6; ++r) {
      double sum = 0;
      for (int c = 0; c < 8; ++c)
        sum += xv[r * 8 + c] * xv[r * 8 + c];
      double rstd = 1.0 / sqrt(sum / 8 + 1e-6);
      for (int c = 0; c < 8; ++c) {
        double expected = xv[r * 8 + c] * rstd * (wv[c] + 1.0);
        double error = fabs(y[r * 8 + c] - expected);
        worst = error > worst ? error : worst;
      }
    }
    CHECK(worst < 1e-12);
    tile_host_results_destroy(results);
  }
  host[0] = tensor(xv, xs, 2, TILE_DTYPE_F32);
  fails_with(tile_function_evaluate(forward, host, 4, 1, &results), "f64",
             "host evaluation of an f32 buffer");

  /* A host module does not launch. */
  fails_with(tile_function_launch(forward, 0, NULL, args, 4, NULL, 0, NULL, 0),
             "host only", "launching a host module");
  tile_module_destroy(module);
}

static void test_bad_source(void) {
  const char *source = "func.func @f(%x: tensor<?xf32>) -> tensor<?xf32>\n"
                       "    attributes {tile.kernel} {\n"
                       "  %y = arith.addf %x, %z : tensor<?xf32>\n"
                       "  return %y : tensor<?xf32>\n"
                       "}\n";
  tile_compile_options options;
  tile_compile_options_init(&options);
  options.source_name = "bad.mlir";
  options.cache_dir = "none";
  tile_module module = NULL;
  fails_with(tile_module_compile(source, strlen(source), &options, &module),
             "bad.mlir:3:", "a source with an undefined value");
  CHECK(module == NULL);
  options.dtype = "f8";
  fails_with(tile_module_compile(source, strlen(source), &options, &module),
             "unknown dtype", "an unknown dtype");
  fails_with(tile_module_compile(NULL, 0, &options, &module), "null",
             "a null source");
  tile_status_destroy(NULL); /* allowed, as free(NULL) */
}

/* The MLP's plan needs no GPU; bad options and shapes are errors. */
static void test_mlp_plan(void) {
  int64_t shards = 0, rows = 0;
  size_t bytes = 0;
  tile_mlp_options options = {4, 0, 1};
  if (ok(tile_mlp_plan(&options, 1000, 300, 1, TILE_DTYPE_BF16, &shards, &rows,
                       &bytes),
         "plan 1000 rows in 4 shards")) {
    CHECK(shards == 4);
    CHECK(rows == 250);
    /* cuBLASLt's 32 MiB, then g, u, h of 250 rows each 256-byte rounded. */
    CHECK(bytes == (32u << 20) + 3 * ((250 * 300 * 2 + 255) / 256 * 256));
  }
  tile_mlp_options budget = {0, (32u << 20) + 3 * 256 + 3 * 300 * 2 * 64, 1};
  if (ok(tile_mlp_plan(&budget, 1000, 300, 1, TILE_DTYPE_F16, &shards, &rows,
                       NULL),
         "plan under a budget")) {
    CHECK(rows == 64);
    CHECK(shards == 16);
  }
  tile_mlp_options negative = {-1, 0, 1};
  fails_with(
      tile_mlp_plan(&negative, 10, 300, 1, TILE_DTYPE_BF16, NULL, NULL, NULL),
      "shard count", "a negative shard count");
  tile_mlp_options untiled = {2, 0, 0};
  fails_with(
      tile_mlp_plan(&untiled, 10, 300, 1, TILE_DTYPE_BF16, NULL, NULL, NULL),
      "untiled", "an untiled step with shards");
  fails_with(tile_mlp_plan(NULL, 10, 300, 1, TILE_DTYPE_F64, NULL, NULL, NULL),
             "bf16, f16 or f32", "a host dtype");
  fails_with(tile_mlp_plan(NULL, 10, 300, 1, TILE_DTYPE_I64, NULL, NULL, NULL),
             "the MLP has dtype i64: it is bf16, f16 or f32",
             "integer data for the MLP");
  /* A grouped step has one cuBLASLt workspace per GEMM stream: the default
     4 streams at 8 experts, 2 when asked for 2, never more than E. */
  size_t dense = 0, grouped_bytes = 0;
  tile_mlp_options two_streams = {4, 0, 1, 2};
  if (ok(tile_mlp_plan(&options, 1000, 300, 1, TILE_DTYPE_BF16, NULL, NULL,
                       &dense),
         "plan the dense step") &&
      ok(tile_mlp_plan(&options, 1000, 300, 8, TILE_DTYPE_BF16, NULL, NULL,
                       &grouped_bytes),
         "plan a grouped step of 8 experts")) {
    CHECK(grouped_bytes == dense + 3 * (32u << 20));
    CHECK(ok(tile_mlp_plan(&two_streams, 1000, 300, 8, TILE_DTYPE_BF16, NULL,
                           NULL, &grouped_bytes),
             "plan 2 streams") &&
          grouped_bytes == dense + (32u << 20));
    CHECK(ok(tile_mlp_plan(&options, 1000, 300, 1, TILE_DTYPE_BF16, NULL, NULL,
                           &grouped_bytes),
             "plan one expert") &&
          grouped_bytes == dense);
  }
  fails_with(tile_mlp_plan(NULL, 10, 300, 0, TILE_DTYPE_BF16, NULL, NULL, NULL),
             "0 experts", "a grouped plan without experts");
  /* The untiled step's workspace is the layout's formula at all its rows:
     what a caller sizes before it knows them. */
  size_t fixed = 0, row_bytes = 0, alignment = 0, untiled_bytes = 0;
  int64_t buffers = 0, kept_buffers = 0;
  tile_mlp_options keep = {0, 0, 0};
  if (ok(tile_mlp_workspace_layout(&keep, 300, 8, TILE_DTYPE_BF16, &fixed,
                                   &buffers, &row_bytes, &alignment,
                                   &kept_buffers),
         "the untiled layout") &&
      ok(tile_mlp_plan(&keep, 1001, 300, 8, TILE_DTYPE_BF16, &shards, &rows,
                       &untiled_bytes),
         "plan the untiled step")) {
    CHECK(fixed == 4 * (32u << 20) && buffers == 3 && row_bytes == 600 &&
          alignment == 256 && kept_buffers == 2);
    CHECK(shards == 1 && rows == 1001);
    CHECK(untiled_bytes ==
          fixed + buffers * ((1001 * row_bytes + alignment - 1) / alignment *
                             alignment));
  }
  fails_with(tile_mlp_workspace_layout(NULL, 300, 1, TILE_DTYPE_F64, NULL, NULL,
                                       NULL, NULL, NULL),
             "bf16, f16 or f32", "a layout of a host dtype");
  fails_with(tile_mlp_workspace_layout(NULL, 300, 0, TILE_DTYPE_BF16, NULL,
                                       NULL, NULL, NULL, NULL),
             "0 experts", "a layout without experts");
  tile_mlp mlp = NULL;
  fails_with(tile_mlp_create(NULL, NULL, &mlp), "null tile_operators",
             "an MLP without operators");
  CHECK(mlp == NULL);
  int64_t splits[2] = {3, 4};
  fails_with(
      tile_mlp_forward(NULL, NULL, NULL, NULL, NULL, NULL, splits, 2, NULL),
      "null tile_mlp", "a forward without an MLP");
  fails_with(tile_mlp_backward(NULL, NULL, NULL, NULL, NULL, NULL, splits, 2,
                               NULL, NULL, NULL, NULL, NULL, 1),
             "null tile_mlp", "a backward without an MLP");
  fails_with(tile_mlp_forward_device_splits(NULL, NULL, NULL, NULL, NULL, NULL,
                                            NULL, NULL),
             "splits", "a forward without its device splits");
  fails_with(tile_mlp_backward_device_splits(NULL, NULL, NULL, NULL, NULL, NULL,
                                             NULL, NULL, NULL, NULL, NULL, NULL,
                                             1),
             "splits", "a backward without its device splits");
  fails_with(
      tile_mlp_forward_routed(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
      "tile_mlp_forward_routed: a null tile_mlp",
      "a routed forward without an MLP");
  fails_with(tile_mlp_backward_routed(NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                      NULL, NULL, NULL, NULL, NULL, 1),
             "tile_mlp_backward_routed: a null tile_mlp",
             "a routed backward without an MLP");
  fails_with(tile_mlp_backward_routed_down(NULL, NULL, NULL, NULL, NULL, NULL,
                                           NULL, NULL, NULL, NULL, 1),
             "tile_mlp_backward_routed_down: a null tile_mlp",
             "a routed backward's down part without an MLP");
  fails_with(tile_mlp_backward_routed_gate_up(NULL, NULL, NULL, NULL, NULL,
                                              NULL, NULL, NULL, NULL, 1),
             "tile_mlp_backward_routed_gate_up: a null tile_mlp",
             "a routed backward's gate/up part without an MLP");
  /* Destroying nothing is allowed, as free(NULL). */
  tile_mlp_destroy(NULL);
  tile_operators_destroy(NULL);
  fails_with(tile_matmul(NULL, NULL, NULL, 0, NULL, 0, NULL, 1.0f),
             "null tile_operators", "a GEMM without operators");
}

/* On a machine with a GPU: the forward on the device matches the host. */
static void test_gpu(void) {
  int count = 0;
  tile_status status = tile_device_count(&count);
  if (status || count == 0) {
    printf("no GPU (%s): launches not tested\n",
           status ? tile_status_message(status) : "0 devices");
    tile_status_destroy(status);
    tile_operators ops = NULL;
    fails_with(tile_operators_create(0, NULL, &ops), "",
               "operators without a GPU");
    return;
  }
  char chip[32];
  if (!ok(tile_device_chip(0, chip, sizeof(chip)), "device chip"))
    return;
  printf("GPU 0 is %s\n", chip);
  /* The launch itself is covered by the Python suite on the GPU machine,
     which owns device memory through torch; here the module loads. */
  const char *source = tile_operator_source("swiglu");
  tile_compile_options options;
  tile_compile_options_init(&options);
  options.chip = chip;
  options.differentiate = 1;
  tile_module module = NULL;
  if (ok(tile_module_compile(source, strlen(source), &options, &module),
         "compile swiglu for the GPU")) {
    CHECK(strstr(tile_module_ptx(module), ".entry") != NULL);
    tile_function forward = NULL;
    ok(tile_module_lookup(module, "swiglu", &forward), "lookup swiglu");
    int64_t shape[2] = {4, 64};
    tile_value args[2] = {tensor(NULL, shape, 2, TILE_DTYPE_BF16),
                          tensor(NULL, shape, 2, TILE_DTYPE_BF16)};
    tile_tensor out = args[0].tensor;
    fails_with(
        tile_function_launch(forward, 0, NULL, args, 2, &out, 1, NULL, 0),
        "null pointer", "launching on null pointers");
    fails_with(
        tile_function_launch(forward, 99, NULL, args, 2, &out, 1, NULL, 0),
        "no GPU 99", "launching on a missing device");
    tile_module_destroy(module);
  }
}

int main(void) {
  CHECK(tile_api_version() == TILE_C_API_VERSION);
  test_describe_infer_evaluate();
  test_bad_source();
  test_mlp_plan();
  test_gpu();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("C API: all checks passed\n");
  return 0;
}
