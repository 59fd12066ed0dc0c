// exp(x - max x), a softmax's or a logsumexp's, is approximable (afn:
// ex2.approx of d * log2 e), in the forward, in the backward derived from
// it, and in the online sum's steps; any other exp keeps libdevice's
// accurate expf. The marks are the pass tile-approximate-shifted-exponentials
// (before tile-differentiate, whose backward clones them, and in
// tile-lower-to-ptx); without it every exp is libdevice's.
// RUN: tile-opt %s -tile-approximate-shifted-exponentials | FileCheck %s --check-prefix=PASS
// RUN: tile-opt %s -tile-approximate-shifted-exponentials -tile-differentiate | FileCheck %s --check-prefix=DIFF
// RUN: tile-opt %s -tile-approximate-shifted-exponentials -convert-tile-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: tile-opt %s -tile-approximate-shifted-exponentials -tile-differentiate -convert-tile-to-gpu | tile-translate --tile-to-ptx | FileCheck %s --check-prefix=PTX
// RUN: tile-opt %s -tile-differentiate | FileCheck %s --check-prefix=NONE
//
// PASS-LABEL: func.func @lse(
// PASS: %[[D:.*]] = arith.subf
// PASS: math.exp %[[D]] fastmath<afn>
// PASS-LABEL: func.func @plain(
// PASS-NOT: fastmath<afn>
// PASS: return
//
// NONE-NOT: fastmath<afn>
//
// DIFF-LABEL: func.func @lse(
// DIFF: math.exp %{{.*}} fastmath<afn>
// DIFF-LABEL: func.func @lse_bwd(
// DIFF: math.exp %{{.*}} fastmath<afn>
// DIFF-LABEL: func.func @plain(
// DIFF-NOT: fastmath<afn>
// DIFF: math.exp %{{.*}} : tensor
// DIFF-LABEL: func.func @plain_bwd(
// DIFF-NOT: fastmath<afn>
// DIFF: return
//
// GPU-LABEL: gpu.func @lse(
// GPU-NOT: gpu.return
// GPU: math.exp %{{.*}} fastmath<afn>
// GPU-LABEL: gpu.func @plain(
// GPU-NOT: fastmath<afn>
// GPU: gpu.return
//
// PTX-LABEL: .entry lse_bwd(
// PTX-NOT: fma.rm.f32
// PTX: ex2.approx
// PTX-NOT: fma.rm.f32
// PTX-LABEL: .entry plain(
// PTX: fma.rm.f32
// PTX: ex2.approx
func.func @lse(%x: tensor<?x?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  %max = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %m = tile.stop_gradient %max : tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = arith.subf %x, %mb : tensor<?x?xf32>
  %e = math.exp %d : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %l = math.log %s : tensor<?xf32>
  %lse = arith.addf %l, %m : tensor<?xf32>
  return %lse : tensor<?xf32>
}

func.func @plain(%x: tensor<?x?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  %e = math.exp %x : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  return %s : tensor<?xf32>
}
