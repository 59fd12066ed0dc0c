// RUN: tile-opt %s -tile-differentiate -split-input-file | FileCheck %s --check-prefix=RAW
// RUN: tile-opt %s -tile-differentiate -canonicalize -cse -split-input-file | FileCheck %s --check-prefix=CANON
// RUN: tile-opt %s -tile-differentiate=policy=save-row-stats -canonicalize -cse -split-input-file | FileCheck %s --check-prefix=SAVE
// RUN: tile-opt %s -tile-differentiate=main-grad -canonicalize -cse -split-input-file | FileCheck %s --check-prefix=MAIN

// SwiGLU: the backward reads a, b and dc only and recomputes σ(a).
//   db = dc·silu(a),   da = dc·b·σ(a) + (dc·b·a)·σ(a)(1 − σ(a))
//                         = dc·b·σ(a)·(1 + a·(1 − σ(a)))

// RAW-LABEL: func.func @swiglu_bwd(
// RAW-SAME: %[[A:.*]]: tensor<?x?xbf16>, %[[B:.*]]: tensor<?x?xbf16>, %[[DC:.*]]: tensor<?x?xbf16> {tile.cotangent = 0 : i64})
// RAW-SAME: -> (tensor<?x?xbf16> {tile.gradient = 0 : i64}, tensor<?x?xbf16> {tile.gradient = 1 : i64})
// RAW-SAME: attributes {tile.backward_of = @swiglu, tile.kernel}
// Recomputation first, then the adjoints in reverse order.
// RAW: %[[AF:.*]] = tile.cast %[[A]]
// RAW: %[[BF:.*]] = tile.cast %[[B]]
// RAW: %[[SIG:.*]] = tile.sigmoid %[[AF]]
// RAW: %[[SILU:.*]] = arith.mulf %[[AF]], %[[SIG]]
// RAW: %[[G:.*]] = tile.cast %[[DC]] : tensor<?x?xbf16> to tensor<?x?xf32>
// RAW: %[[DSILU:.*]] = arith.mulf %[[G]], %[[BF]]
// RAW: %[[DB:.*]] = arith.mulf %[[G]], %[[SILU]]
// RAW: %[[DA1:.*]] = arith.mulf %[[DSILU]], %[[SIG]]
// RAW: %[[DSIG:.*]] = arith.mulf %[[DSILU]], %[[AF]]
// RAW: %[[ONE:.*]] = tile.splat
// RAW: %[[OMS:.*]] = arith.subf %[[ONE]], %[[SIG]]
// RAW: %[[DSDA:.*]] = arith.mulf %[[SIG]], %[[OMS]]
// RAW: %[[DA2:.*]] = arith.mulf %[[DSIG]], %[[DSDA]]
// RAW: %[[DA:.*]] = arith.addf %[[DA1]], %[[DA2]]
// RAW: %[[DAB:.*]] = tile.cast %[[DA]] : tensor<?x?xf32> to tensor<?x?xbf16>
// RAW: %[[DBB:.*]] = tile.cast %[[DB]] : tensor<?x?xf32> to tensor<?x?xbf16>
// RAW: return %[[DAB]], %[[DBB]]

// Nothing is saved under either policy: σ(a) is not a per-row value.
// SAVE-NOT: @swiglu_fwd
// SAVE-LABEL: func.func @swiglu_bwd(
// SAVE-SAME: %{{.*}}: tensor<?x?xbf16>, %{{.*}}: tensor<?x?xbf16>, %{{.*}}: tensor<?x?xbf16> {tile.cotangent = 0 : i64}) ->
// SAVE: tile.sigmoid
func.func @swiglu(%a: tensor<?x?xbf16>, %b: tensor<?x?xbf16>)
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %af = tile.cast %a : tensor<?x?xbf16> to tensor<?x?xf32>
  %bf = tile.cast %b : tensor<?x?xbf16> to tensor<?x?xf32>
  %sig = tile.sigmoid %af : tensor<?x?xf32>
  %silu = arith.mulf %af, %sig : tensor<?x?xf32>
  %c = arith.mulf %silu, %bf : tensor<?x?xf32>
  %cb = tile.cast %c : tensor<?x?xf32> to tensor<?x?xbf16>
  return %cb : tensor<?x?xbf16>
}

// -----

// silu_and_mul: both halves' gradients land in one [M, 2H] cotangent,
// side by side; the outer pad zeroes the column an odd width drops.

// RAW-LABEL: func.func @silu_and_mul_bwd(
// RAW: tile.pad %{{.*}}[%{{.*}}] like
// RAW: tile.pad %{{.*}}[%{{.*}}] like
// RAW: arith.addf

// CANON-LABEL: func.func @silu_and_mul_bwd(
// CANON-SAME: %[[X:.*]]: tensor<?x?xbf16>, %[[DC:.*]]: tensor<?x?xbf16> {tile.cotangent = 0 : i64}) -> (tensor<?x?xbf16> {tile.gradient = 0 : i64})
// CANON-DAG: %[[C0:.*]] = arith.constant 0 : index
// CANON-DAG: %[[H:.*]] = arith.divui
// CANON: %[[A:.*]] = tile.slice %[[X]][%[[C0]], %[[H]]]
// CANON: %[[B:.*]] = tile.slice %[[X]][%[[H]], %[[H]]]
// CANON: %[[AF:.*]] = tile.cast %[[A]]
// CANON: %[[SIG:.*]] = tile.sigmoid %[[AF]]
// CANON: %[[SILU:.*]] = arith.mulf %[[AF]], %[[SIG]]
// CANON: %[[G:.*]] = tile.cast %[[DC]]
// CANON: %[[DB:.*]] = arith.mulf %[[G]], %[[SILU]]
// CANON: %[[DA:.*]] = arith.addf
// CANON: %[[BOTH:.*]] = tile.concat %[[DA]], %[[DB]] : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
// CANON: %[[ROW:.*]] = tile.pad %[[BOTH]][%[[C0]]] like %[[X]]
// CANON: %[[OUT:.*]] = tile.cast %[[ROW]] : tensor<?x?xf32> to tensor<?x?xbf16>
// CANON: return %[[OUT]]
func.func @silu_and_mul(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %width = tensor.dim %x, %c1 : tensor<?x?xbf16>
  %h = arith.divui %width, %c2 : index
  %a = tile.slice %x [%c0, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
  %b = tile.slice %x [%h, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
  %af = tile.cast %a : tensor<?x?xbf16> to tensor<?x?xf32>
  %bf = tile.cast %b : tensor<?x?xbf16> to tensor<?x?xf32>
  %sig = tile.sigmoid %af : tensor<?x?xf32>
  %silu = arith.mulf %af, %sig : tensor<?x?xf32>
  %out = arith.mulf %silu, %bf : tensor<?x?xf32>
  %outb = tile.cast %out : tensor<?x?xf32> to tensor<?x?xbf16>
  return %outb : tensor<?x?xbf16>
}

// -----

// RMSNorm. With g = dy·(w + offset) and x̂ = x·rstd:
//   dx = rstd·g − x·rstd³·mean(g·x) = rstd·(g − x̂·mean(x̂·g))
//   dw = Σ_rows dy·x̂, a cross-row reduction.

// CANON-LABEL: func.func @rms_norm_bwd(
// CANON-SAME: %[[X:.*]]: tensor<?x?xbf16>, %[[W:.*]]: tensor<?xbf16>, %[[EPS:.*]]: f32 {tile.nograd}, %[[OFF:.*]]: f32 {tile.nograd}, %[[DY:.*]]: tensor<?x?xbf16> {tile.cotangent = 0 : i64})
// CANON-SAME: -> (tensor<?x?xbf16> {tile.gradient = 0 : i64}, tensor<?xbf16> {tile.gradient = 1 : i64})
// Recompute policy: rstd comes from the inputs again.
// CANON: %[[XF:.*]] = tile.cast %[[X]]
// CANON: %[[SQ:.*]] = arith.mulf %[[XF]], %[[XF]]
// CANON: %[[MS:.*]] = tile.reduce mean %[[SQ]] [1]
// CANON: %[[RSTD:.*]] = math.rsqrt
// CANON: %[[RB:.*]] = tile.broadcast %[[RSTD]] [1] like %[[X]]
// CANON: %[[XHAT:.*]] = arith.mulf %[[XF]], %[[RB]]
// CANON: %[[WB:.*]] = tile.broadcast %{{.*}} [0] like %[[X]]
// CANON: %[[GY:.*]] = tile.cast %[[DY]]
// CANON: %[[G:.*]] = arith.mulf %[[GY]], %[[WB]]
// CANON: %[[DYXHAT:.*]] = arith.mulf %[[GY]], %[[XHAT]]
// CANON: %[[DW:.*]] = tile.reduce sum %[[DYXHAT]] [0] across_rows
// CANON: %[[GR:.*]] = arith.mulf %[[G]], %[[RB]]
// CANON: %[[GX:.*]] = arith.mulf %[[G]], %[[XF]]
// CANON: %[[SUM:.*]] = tile.reduce sum %[[GX]] [1]
// CANON: %[[R2:.*]] = arith.mulf %[[RSTD]], %[[RSTD]]
// CANON: %[[R3:.*]] = arith.mulf %[[RSTD]], %[[R2]]
// CANON: %[[HALF:.*]] = arith.mulf %[[SUM]], %{{.*}}
// CANON: %[[DVAR:.*]] = arith.mulf %[[HALF]], %[[R3]]
// CANON: %[[N:.*]] = arith.sitofp
// CANON: %[[DMEAN:.*]] = arith.divf %[[DVAR]], %{{.*}}
// CANON: %[[DMB:.*]] = tile.broadcast %[[DMEAN]] [1] like %[[X]]
// CANON: %[[DSQ:.*]] = arith.mulf %[[DMB]], %[[XF]]
// CANON: %[[DX1:.*]] = arith.addf %[[GR]], %[[DSQ]]
// CANON: %[[DX:.*]] = arith.addf %[[DX1]], %[[DSQ]]
// CANON: %[[DXB:.*]] = tile.cast %[[DX]] : tensor<?x?xf32> to tensor<?x?xbf16>
// CANON: %[[DWB:.*]] = tile.cast %[[DW]] : tensor<?xf32> to tensor<?xbf16>
// CANON: return %[[DXB]], %[[DWB]]

// save-row-stats: rstd is saved by @rms_norm_fwd and read by the backward,
// which no longer reduces x².
// SAVE-LABEL: func.func @rms_norm_fwd(
// SAVE-SAME: -> (tensor<?x?xbf16>, tensor<?xf32> {tile.saved = 0 : i64})
// SAVE-SAME: attributes {tile.forward_of = @rms_norm, tile.kernel}
// SAVE: %[[FRSTD:.*]] = math.rsqrt
// SAVE: return %{{.*}}, %[[FRSTD]] : tensor<?x?xbf16>, tensor<?xf32>
// SAVE-LABEL: func.func @rms_norm_bwd(
// SAVE-SAME: %[[DY:arg[0-9]+]]: tensor<?x?xbf16> {tile.cotangent = 0 : i64}, %[[RSTD:arg[0-9]+]]: tensor<?xf32> {tile.saved = 0 : i64})
// SAVE-NOT: tile.reduce mean
// SAVE-NOT: math.rsqrt
// SAVE: tile.broadcast %[[RSTD]] [1]
// SAVE: tile.reduce sum %{{.*}} [0] across_rows
// SAVE: tile.reduce sum %{{.*}} [1] :
// SAVE: arith.mulf %[[RSTD]], %[[RSTD]]
// SAVE: return

// main-grad: dW is added to an fp32 accumulator by the reduction itself.
// MAIN-LABEL: func.func @rms_norm_bwd(
// MAIN-SAME: %[[MG:arg[0-9]+]]: tensor<?xf32> {tile.main_grad = 1 : i64})
// MAIN-SAME: -> (tensor<?x?xbf16> {tile.gradient = 0 : i64}, tensor<?xf32> {tile.gradient = 1 : i64})
// MAIN: %[[DW:.*]] = tile.reduce sum %{{.*}} [0] across_rows into %[[MG]] : tensor<?x?xf32> -> tensor<?xf32>
// MAIN: return %{{.*}}, %[[DW]] : tensor<?x?xbf16>, tensor<?xf32>
func.func @rms_norm(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>,
                    %eps: f32 {tile.nograd}, %offset: f32 {tile.nograd})
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %sq = arith.mulf %xf, %xf : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %epsv = tile.splat %eps like %ms : f32, tensor<?xf32> -> tensor<?xf32>
  %var = arith.addf %ms, %epsv : tensor<?xf32>
  %rstd = math.rsqrt %var : tensor<?xf32>
  %rb = tile.broadcast %rstd [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %xhat = arith.mulf %xf, %rb : tensor<?x?xf32>
  %wf = tile.cast %w : tensor<?xbf16> to tensor<?xf32>
  %offv = tile.splat %offset like %wf : f32, tensor<?xf32> -> tensor<?xf32>
  %wo = arith.addf %wf, %offv : tensor<?xf32>
  %wb = tile.broadcast %wo [0] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %xhat, %wb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}

// -----

// Per-op policy: `tile.recompute` keeps rstd out of the saved set even under
// save-row-stats; `tile.save` saves σ(x) under either policy.

// CANON-LABEL: func.func @policy_fwd(
// CANON-SAME: -> (tensor<?x?xf32>, tensor<?x?xf32> {tile.saved = 0 : i64})
// CANON: %[[S:.*]] = tile.sigmoid
// CANON: return %{{.*}}, %[[S]]
// CANON-LABEL: func.func @policy_bwd(
// CANON-SAME: %[[SAVED:arg[0-9]+]]: tensor<?x?xf32> {tile.saved = 0 : i64})
// CANON-NOT: tile.sigmoid
// CANON: return

// Under save-row-stats the policy then saves the mean of x² instead, from
// which the backward recomputes rstd at one operation per row.
// SAVE-LABEL: func.func @policy_fwd(
// SAVE-SAME: -> (tensor<?x?xf32>, tensor<?xf32> {tile.saved = 0 : i64}, tensor<?x?xf32> {tile.saved = 1 : i64})
// SAVE-LABEL: func.func @policy_bwd(
// SAVE-NOT: tile.reduce mean
// SAVE: math.rsqrt
// SAVE-NOT: tile.reduce mean
// SAVE: return
func.func @policy(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %sq = arith.mulf %x, %x : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %rstd = math.rsqrt %ms {tile.recompute} : tensor<?xf32>
  %rb = tile.broadcast %rstd [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %s = tile.sigmoid %x {tile.save} : tensor<?x?xf32>
  %y = arith.mulf %s, %rb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// A weight broadcast twice: its two cross-row sums become one, which
// main-grad then accumulates. An argument nothing depends on gets zeros.

// CANON-LABEL: func.func @twice_bwd(
// CANON: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<8xf32>
// CANON-COUNT-1: across_rows
// CANON-NOT: across_rows
// CANON: return %{{.*}}, %{{.*}}, %[[Z]] : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>
// MAIN-LABEL: func.func @twice_bwd(
// MAIN-SAME: %{{.*}}: tensor<8xf32> {tile.main_grad = 1 : i64})
// MAIN: tile.reduce sum %{{.*}} [0] across_rows into
// MAIN-NOT: across_rows
func.func @twice(%x: tensor<?x8xf32>, %w: tensor<8xf32>, %unused: tensor<8xf32>)
    -> tensor<?x8xf32> attributes {tile.kernel} {
  %wb = tile.broadcast %w [0] like %x
      : tensor<8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %p = arith.mulf %x, %wb : tensor<?x8xf32>
  %y = arith.addf %p, %wb : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// One cotangent handed to both operands (w + w), both a cross-row sum: the
// two merge into one sum of g·x + g·x, and the shared one is not consumed
// twice.
// CANON-LABEL: func.func @shared_bwd(
// CANON: %[[P:.*]] = arith.mulf %arg2, %arg0
// CANON: %[[PP:.*]] = arith.addf %[[P]], %[[P]]
// CANON: %[[S:.*]] = tile.reduce sum %[[PP]] [0] across_rows
// CANON-NOT: across_rows
// CANON: return %{{.*}}, %[[S]]
// MAIN-LABEL: func.func @shared_bwd(
// MAIN: tile.reduce sum %{{.*}} [0] across_rows into %arg3
func.func @shared(%x: tensor<?x8xf32>, %w: tensor<8xf32>) -> tensor<?x8xf32>
    attributes {tile.kernel} {
  %ww = arith.addf %w, %w : tensor<8xf32>
  %wb = tile.broadcast %ww [0] like %x
      : tensor<8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %y = arith.mulf %x, %wb : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Two weights share one cotangent (w1 + w2 broadcast): each gets its own
// accumulation into its own main_grad.
// MAIN-LABEL: func.func @two_weights_bwd(
// MAIN-SAME: %[[M1:arg[0-9]+]]: tensor<8xf32> {tile.main_grad = 1 : i64}, %[[M2:arg[0-9]+]]: tensor<8xf32> {tile.main_grad = 2 : i64})
// MAIN: %[[S1:.*]] = tile.reduce sum %[[P:.*]] [0] across_rows into %[[M1]]
// MAIN: %[[S2:.*]] = tile.reduce sum %[[P]] [0] across_rows into %[[M2]]
// MAIN: return %{{.*}}, %[[S1]], %[[S2]]
func.func @two_weights(%x: tensor<?x8xf32>, %w1: tensor<8xf32>,
                       %w2: tensor<8xf32>) -> tensor<?x8xf32>
    attributes {tile.kernel} {
  %w = arith.addf %w1, %w2 : tensor<8xf32>
  %wb = tile.broadcast %w [0] like %x
      : tensor<8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %y = arith.mulf %x, %wb : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
