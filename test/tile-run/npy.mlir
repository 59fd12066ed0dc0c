// Data in and out: --output-dir writes the inputs, the results, the
// cotangents and the derived gradients as .npy; NumPy recomputes the
// kernel and its gradients in float64 from those files; --input reads
// arguments back, and the same data gives the same results bit for bit.
//
// REQUIRES: numpy
// RUN: rm -rf %t && mkdir -p %t
// RUN: tile-run %s --args=5x7,7 --gradient --seed=3 --output-dir=%t/out | FileCheck %s
// RUN: %numpy-python %S/check_npy.py reference %t/out
// RUN: tile-run %s --args=,_ --input=x=%t/out/x.npy --input=#1=%t/out/w.npy --gradient --seed=3 --output-dir=%t/again
// RUN: %numpy-python %S/check_npy.py same %t/out %t/again
//
// CHECK: result #0
// CHECK: grad_x (@gated_tanh_bwd result #0, seeded cotangents)
// CHECK: grad_w (@gated_tanh_bwd result #1, seeded cotangents)
func.func @gated_tanh(%x: tensor<?x?xf32>, %w: tensor<?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %wb = tile.broadcast %w [0] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %p = arith.mulf %x, %wb : tensor<?x?xf32>
  %t = math.tanh %p : tensor<?x?xf32>
  return %t : tensor<?x?xf32>
}
