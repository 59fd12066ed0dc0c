// A file whose functions lack `attributes {tile.kernel}` passes the tile
// passes unchanged: each says so, at the first function, and succeeds.
//
// RUN: tile-opt %s -tile-differentiate -tile-schedule -convert-tile-to-gpu 2>&1 >/dev/null | FileCheck %s
// CHECK: no-kernel.mlir:[[@LINE+4]]:1: warning: tile-differentiate: no function has the `tile.kernel` attribute, so there is nothing to do (a kernel is a func.func with `attributes {tile.kernel}`; docs/Dialect.md)
// CHECK: warning: tile-schedule: no function has the `tile.kernel` attribute
// CHECK: warning: convert-tile-to-gpu: no function has the `tile.kernel` attribute
// CHECK-NOT: warning
func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  return %x : tensor<?x?xf32>
}
