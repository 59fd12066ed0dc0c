// RUN: tile-opt %s -tile-differentiate=return-primal -canonicalize -cse | FileCheck %s
// RUN: tile-opt %s -tile-differentiate=return-primal | tile-translate --tile-kernel-signature | FileCheck %s --check-prefix=SIG

// return-primal: the backward also returns the forward's result, computed
// from the same recomputed silu(a) as the gradients (one sigmoid, shared).

// CHECK-LABEL: func.func @swiglu_bwd(
// CHECK-SAME: %[[A:.*]]: tensor<?x?xbf16>, %[[B:.*]]: tensor<?x?xbf16>, %[[DC:.*]]: tensor<?x?xbf16> {tile.cotangent = 0 : i64})
// CHECK-SAME: -> (tensor<?x?xbf16> {tile.gradient = 0 : i64}, tensor<?x?xbf16> {tile.gradient = 1 : i64}, tensor<?x?xbf16> {tile.primal = 0 : i64})
// CHECK: %[[AF:.*]] = tile.cast %[[A]]
// CHECK: %[[BF:.*]] = tile.cast %[[B]]
// CHECK: %[[SIGMA:.*]] = tile.sigmoid %[[AF]]
// CHECK-NOT: tile.sigmoid
// CHECK: %[[SILU:.*]] = arith.mulf %[[AF]], %[[SIGMA]]
// CHECK: %[[C:.*]] = arith.mulf %[[SILU]], %[[BF]]
// CHECK: %[[CB:.*]] = tile.cast %[[C]] : tensor<?x?xf32> to tensor<?x?xbf16>
// CHECK: return %{{.*}}, %{{.*}}, %[[CB]]

// SIG: "name": "swiglu_bwd"
// SIG: "results": [
// SIG: "role": "gradient"
// SIG: "role": "gradient"
// SIG: "of": 0
// SIG-NEXT: "role": "primal"

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
