// tile-run --device on a machine without a GPU says so and exits with the
// status 77 ("skipped"), which a failed check (1) never has.
// UNSUPPORTED: cuda
// RUN: env TILE_LIBCUDA=%t.none.so %expect-status 77 tile-run %s --device --gradient --args=7x13 2>&1 | FileCheck %s
// CHECK: tile-run: --device: no usable GPU (no CUDA driver: cannot open {{.*}}none.so{{.*}}); nothing was run
func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = math.tanh %x : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
