// The contraction's derivative rules, numerically: kernels that begin with
// a projection, checked against finite differences in exact float64 (the
// gradient check evaluates without the storage roundings). Plain, with an
// activation epilogue (silu_and_mul of the two halves), and with a
// row-reducing loss epilogue (cross-entropy against a label); both layouts
// of the matrix; the rows' outer products themselves (contract_rows, the
// form a second derivative differentiates); a matrix used twice (a tied
// weight: its two gradients one chain of sums); each with and without
// main_grad, which absorbs the matrix's gradient.
//
// RUN: tile-run %s --gradient-check --function=project --args=MxN,5xN --rows=1,7 --widths=1,13 | FileCheck %s --check-prefix=FOUR
// RUN: tile-run %s --gradient-check --function=project --main-grad --args=MxN,5xN --rows=1,7 --widths=1,13 | FileCheck %s --check-prefix=FOUR
// RUN: tile-run %s --gradient-check --function=project_by_columns --args=MxN,Nx5 --rows=1,7 --widths=1,13 | FileCheck %s --check-prefix=FOUR
// RUN: tile-run %s --gradient-check --function=project_by_columns --main-grad --args=MxN,Nx5 --rows=7 --widths=13 | FileCheck %s --check-prefix=ONE
// RUN: tile-run %s --gradient-check --function=project_silu_and_mul --args=MxN,6xN --rows=1,7 --widths=1,13 | FileCheck %s --check-prefix=FOUR
// RUN: tile-run %s --gradient-check --function=project_silu_and_mul --main-grad --policy=save-row-stats --args=MxN,6xN --rows=7 --widths=13 | FileCheck %s --check-prefix=ONE
// RUN: tile-run %s --gradient-check --function=project_cross_entropy --low=-2 --high=7 --args=MxN,7xN,M --rows=1,7 --widths=1,13 | FileCheck %s --check-prefix=FOUR
// RUN: tile-run %s --gradient-check --function=project_cross_entropy --main-grad --policy=save-row-stats --low=-2 --high=7 --args=MxN,7xN,M --rows=7 --widths=13 | FileCheck %s --check-prefix=ONE
// RUN: tile-run %s --gradient-check --function=tied --args=MxN,5xN --rows=1,7 --widths=1,13 | FileCheck %s --check-prefix=FOUR
// RUN: tile-run %s --gradient-check --function=tied --main-grad --args=MxN,5xN --rows=1,7 --widths=1,13 | FileCheck %s --check-prefix=FOUR
// RUN: tile-run %s --gradient-check --function=outer_products --args=MxN,Mx4 --rows=1,7 --widths=1,13 | FileCheck %s --check-prefix=FOUR
// A contraction's work is its result times the contracted dimension: one
// this large is refused before it starts (not run for minutes).
// RUN: %expect-error tile-run --function=project --args=3000x2000,3000x2000 %s
// RUN: not tile-run --function=project --args=3000x2000,3000x2000 %s 2>&1 | FileCheck %s --check-prefix=LIMIT
//
// FOUR: 8 gradients checked, 0 failed
// ONE: 2 gradients checked, 0 failed
// LIMIT: takes about 18012000000 element operations

// y = x · Wᵀ, W [5, K] as a Linear's weight.
func.func @project(%x: tensor<?x?xbf16>, %w: tensor<?x?xbf16>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = tile.contract %x, %w over 1
      : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// y = x · W, W [K, 5].
func.func @project_by_columns(%x: tensor<?x?xf32>, %w: tensor<?x?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = tile.contract %x, %w over 0
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// The gated MLP's first half: project to [gate | up], then silu(gate)·up.
func.func @project_silu_and_mul(%x: tensor<?x?xbf16>, %w: tensor<?x?xbf16>)
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %y = tile.contract %x, %w over 1
      : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  %width = tensor.dim %y, %c1 : tensor<?x?xf32>
  %half = arith.divui %width, %c2 : index
  %gate = tile.slice %y [%c0, %half] : tensor<?x?xf32> -> tensor<?x?xf32>
  %up = tile.slice %y [%half, %half] : tensor<?x?xf32> -> tensor<?x?xf32>
  %s = tile.sigmoid %gate : tensor<?x?xf32>
  %silu = arith.mulf %gate, %s : tensor<?x?xf32>
  %h = arith.mulf %silu, %up : tensor<?x?xf32>
  %out = tile.cast %h : tensor<?x?xf32> to tensor<?x?xbf16>
  return %out : tensor<?x?xbf16>
}

// The LM head with its loss: project to the vocabulary (7), then each
// row's cross-entropy against its label (a label outside [0, 7) picks no
// logit: its loss is the logsumexp alone).
func.func @project_cross_entropy(%x: tensor<?x?xbf16>, %w: tensor<?x?xbf16>,
                                 %labels: tensor<?xi64>)
    -> tensor<?xf32> attributes {tile.kernel} {
  %zero = arith.constant 0.0 : f32
  %logits = tile.contract %x, %w over 1
      : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  %max = tile.reduce max %logits [1] : tensor<?x?xf32> -> tensor<?xf32>
  %m = tile.stop_gradient %max : tensor<?xf32>
  %mb = tile.broadcast %m [1] like %logits
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %shifted = arith.subf %logits, %mb : tensor<?x?xf32>
  %e = math.exp %shifted : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %logs = math.log %s : tensor<?xf32>
  %lse = arith.addf %logs, %m : tensor<?xf32>
  %label = tile.cast %labels : tensor<?xi64> to tensor<?xf32>
  %lb = tile.broadcast %label [1] like %logits
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %column = tile.iota like %logits : tensor<?x?xf32> -> tensor<?x?xf32>
  %hit = arith.cmpf oeq, %column, %lb : tensor<?x?xf32>
  %zeros = tile.splat %zero like %logits
      : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %picked = arith.select %hit, %logits, %zeros
      : tensor<?x?xi1>, tensor<?x?xf32>
  %target = tile.reduce sum %picked [1] : tensor<?x?xf32> -> tensor<?xf32>
  %loss = arith.subf %lse, %target : tensor<?xf32>
  return %loss : tensor<?xf32>
}

// aᵀ · b over the rows: [K, 4].
func.func @outer_products(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %r = tile.contract_rows %a, %b across_rows
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// One matrix used twice, as a tied weight: (x · Wᵀ) · W.
func.func @tied(%x: tensor<?x?xbf16>, %w: tensor<?x?xbf16>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = tile.contract %x, %w over 1
      : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  %z = tile.contract %yb, %w over 0
      : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  return %z : tensor<?x?xf32>
}
