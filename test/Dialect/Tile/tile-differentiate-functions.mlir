// RUN: tile-opt %s -tile-differentiate=functions=second | FileCheck %s
// RUN: %expect-error tile-opt -tile-differentiate=functions=missing %s
// RUN: not tile-opt %s -tile-differentiate=functions=missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: %expect-error tile-opt -tile-differentiate=functions=helper %s
// RUN: not tile-opt %s -tile-differentiate=functions=helper 2>&1 | FileCheck %s --check-prefix=HELPER
// RUN: tile-opt %s -tile-differentiate | tile-opt -tile-differentiate | FileCheck %s --check-prefix=TWICE

// `functions` picks the kernels; only those are derived.
// CHECK-NOT: @first_bwd
// CHECK: func.func @second_bwd
// CHECK-NOT: @first_bwd
// MISSING: error: tile-differentiate: no function @missing
// HELPER: error: 'func.func' op is not a tile.kernel; only kernels can be differentiated

// A second run changes nothing: the kernels are derived already, and the
// derived functions are not differentiated again.
// TWICE-COUNT-2: func.func @{{.*}}_bwd
// TWICE-NOT: _bwd_bwd

func.func @first(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  %0 = arith.mulf %x, %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @second(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  %0 = math.exp %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @helper(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}
