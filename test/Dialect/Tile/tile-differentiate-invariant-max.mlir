// A row maximum (or minimum) that no result depends on is held constant by
// the differentiator: a softmax, a log-softmax, a logsumexp and a softmin
// written without tile.stop_gradient get no cotangent for it, so their
// backward neither sums a cotangent that cancels nor shares it among the
// tied maxima (no compare, no count). Where a result does depend on it
// (returned, scaled, a range) the tie routing stays. The gradient checks
// confirm each derivative against finite differences.
//
// RUN: tile-opt %s -tile-differentiate -canonicalize -cse | FileCheck %s
// RUN: tile-opt %s -tile-differentiate=return-primal -canonicalize -cse | FileCheck %s --check-prefix=PRIMAL
// RUN: tile-run %s --gradient-check --function=softmax --args=MxN --rows=1,7 --widths=1,13,1000 | FileCheck %s --check-prefix=GRAD
// RUN: tile-run %s --gradient-check --function=log_softmax --args=MxN --rows=1,7 --widths=1,13,1000 | FileCheck %s --check-prefix=GRAD
// RUN: tile-run %s --gradient-check --function=logsumexp --args=MxN --rows=1,7 --widths=1,13,1000 | FileCheck %s --check-prefix=GRAD
// RUN: tile-run %s --gradient-check --function=softmin --args=MxN --rows=1,7 --widths=1,13,1000 | FileCheck %s --check-prefix=GRAD
// RUN: tile-run %s --gradient-check --function=softmax_and_max --args=MxN --rows=1,7 --widths=1,13,1000 | FileCheck %s --check-prefix=GRAD
// RUN: tile-run %s --gradient-check --function=tempered_softmax --args=MxN,0.5 --rows=1,7 --widths=1,13,1000 | FileCheck %s --check-prefix=GRAD
// RUN: tile-run %s --gradient-check --policy=save-row-stats --function=softmax --args=MxN --rows=1,7 --widths=1,13,1000 | FileCheck %s --check-prefix=GRAD
// GRAD: 6 gradients checked, 0 failed

// Three row reductions: the maximum and the sum recomputed, and the one
// the quotient's cotangent needs (return-primal: the backward recomputes
// y, as it returns it). Otherwise no x at all: with the maximum constant,
// the backward is y·(g − Σ g·y) on the y the forward returned
// (QuotientResults.h, tile-differentiate-forward-results.mlir).
// PRIMAL-LABEL: func.func @softmax_bwd
// PRIMAL: tile.reduce max
// PRIMAL: tile.reduce sum
// PRIMAL: tile.reduce sum
// PRIMAL-NOT: {{tile.reduce|arith.cmpf}}
// PRIMAL: return
// CHECK-LABEL: func.func @softmax_bwd
// CHECK-SAME: {tile.forward_result = 0 : i64}
// CHECK: tile.reduce sum
// CHECK-NOT: {{tile.reduce|arith.cmpf|math.exp}}
// CHECK: return
func.func @softmax(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %m = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = arith.subf %x, %mb : tensor<?x?xf32>
  %e = math.exp %d : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.divf %e, %sb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// x - m - log Σ exp(x - m): offset(-1) - offset(-1).
// CHECK-LABEL: func.func @log_softmax_bwd
// CHECK: tile.reduce max
// CHECK: tile.reduce sum
// CHECK: tile.reduce sum
// CHECK-NOT: {{tile.reduce|arith.cmpf}}
// CHECK: return
func.func @log_softmax(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %m = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = arith.subf %x, %mb : tensor<?x?xf32>
  %e = math.exp %d : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %l = math.log %s : tensor<?xf32>
  %lb = tile.broadcast %l [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.subf %d, %lb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// m + log Σ exp(x - m): the row result itself.
// CHECK-LABEL: func.func @logsumexp_bwd
// CHECK: tile.reduce max
// CHECK: tile.reduce sum
// CHECK-NOT: {{tile.reduce|arith.cmpf}}
// CHECK: return
func.func @logsumexp(%x: tensor<?x?xf32>) -> tensor<?xf32>
    attributes {tile.kernel} {
  %m = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = arith.subf %x, %mb : tensor<?x?xf32>
  %e = math.exp %d : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %l = math.log %s : tensor<?xf32>
  %lse = arith.addf %l, %m : tensor<?xf32>
  return %lse : tensor<?xf32>
}

// exp(min - x) / Σ exp(min - x): a row minimum, the shift the other way.
// CHECK-LABEL: func.func @softmin_bwd
// CHECK-SAME: {tile.forward_result = 0 : i64}
// CHECK: tile.reduce sum
// CHECK-NOT: {{tile.reduce|arith.cmpf|math.exp}}
// CHECK: return
func.func @softmin(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %m = tile.reduce min %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = arith.subf %mb, %x : tensor<?x?xf32>
  %e = math.exp %d : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.divf %e, %sb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// The maximum is a result too: its gradient is shared among the ties.
// CHECK-LABEL: func.func @softmax_and_max_bwd
// CHECK: arith.cmpf oeq
// CHECK: return
func.func @softmax_and_max(%x: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>) attributes {tile.kernel} {
  %m = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = arith.subf %x, %mb : tensor<?x?xf32>
  %e = math.exp %d : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.divf %e, %sb : tensor<?x?xf32>
  return %y, %m : tensor<?x?xf32>, tensor<?xf32>
}

// exp((x - m)·t): invariant too, but a shift times a value is not one of
// the forms the rules follow, so the maximum keeps its (cancelling)
// cotangent: correct, not the shortest backward.
// CHECK-LABEL: func.func @tempered_softmax_bwd
// CHECK: arith.cmpf oeq
// CHECK: return
func.func @tempered_softmax(%x: tensor<?x?xf32>, %t: f32 {tile.nograd})
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %m = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = arith.subf %x, %mb : tensor<?x?xf32>
  %tb = tile.splat %t like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %dt = arith.mulf %d, %tb : tensor<?x?xf32>
  %e = math.exp %dt : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.divf %e, %sb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// max(x − m, 0): a shift against the unshifted 0, which the rules cannot
// follow; the maximum keeps its cotangent.
// RUN: tile-run %s --gradient-check --function=relu_of_shifted --args=MxN --rows=1,7 --widths=1,13,1000 | FileCheck %s --check-prefix=GRAD
// CHECK-LABEL: func.func @relu_of_shifted_bwd
// CHECK: arith.cmpf oeq
// CHECK: return
func.func @relu_of_shifted(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %m = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = arith.subf %x, %mb : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %z = tile.splat %zero like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %r = arith.maximumf %d, %z : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
