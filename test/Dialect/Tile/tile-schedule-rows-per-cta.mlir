// RUN: tile-opt %s -tile-schedule | FileCheck %s
// RUN: tile-opt %s -tile-schedule=threads=128 | FileCheck %s --check-prefix=T128

// A kernel that reduces over its rows, specialized for a narrow width, gets
// several rows per CTA, so that every thread has two 16-byte chunks of its
// row: 1024 bf16 columns are 128 chunks, two each for 64 threads. A row of
// at most 128 chunks takes a CTA of 128 threads (chooseThreads): two rows
// to a CTA; at 256 threads it would be four.
// CHECK-LABEL: func.func @narrow
// CHECK-SAME: rows_per_cta = 2 : i64, threads = 128 : i64
// T128-LABEL: func.func @narrow
// T128-SAME: rows_per_cta = 2 : i64
func.func @narrow(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel, tile.specialize = {w0 = 1024 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %s = tile.reduce sum %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.subf %xf, %sb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}

// 2048 columns (256 threads): two rows. 4096: one (no rows_per_cta
// entry).
// CHECK-LABEL: func.func @medium
// CHECK-SAME: rows_per_cta = 2 : i64, threads = 256 : i64
func.func @medium(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel, tile.specialize = {w0 = 2048 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %s = tile.reduce sum %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.subf %xf, %sb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}

// CHECK-LABEL: func.func @wide
// CHECK-NOT: rows_per_cta
// CHECK-SAME: threads = 256
// CHECK: return
func.func @wide(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel, tile.specialize = {w0 = 4096 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %s = tile.reduce sum %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.subf %xf, %sb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}

// Not specialized: the width is unknown, one row per CTA.
// CHECK-LABEL: func.func @unknown
// CHECK-NOT: rows_per_cta
// CHECK: return
func.func @unknown(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %s = tile.reduce sum %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.subf %xf, %sb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}

// An elementwise kernel keeps one row per CTA at any width: it has no
// barrier to idle at.
// CHECK-LABEL: func.func @elementwise
// CHECK-NOT: rows_per_cta
// CHECK: return
func.func @elementwise(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel, tile.specialize = {w0 = 1024 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %y = arith.addf %xf, %xf : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}

// A kernel that reduces across rows gets them too: its groups' partials
// are added within the CTA, one partial row per CTA reaches the finalize.
// CHECK-LABEL: func.func @across
// CHECK-SAME: ctas = 264 : i64, ctas_per_sm = 2 : i64, grid = "persistent", rows_per_cta = 4 : i64, threads = 256 : i64
// CHECK: return
func.func @across(%x: tensor<?x?xbf16>) -> (tensor<?x?xbf16>, tensor<?xf32>)
    attributes {tile.kernel, tile.specialize = {w0 = 1024 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %s = tile.reduce sum %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = tile.broadcast %s [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.subf %xf, %sb : tensor<?x?xf32>
  %c = tile.reduce sum %y [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb, %c : tensor<?x?xbf16>, tensor<?xf32>
}

// A cross-row kernel wider than two chunks a thread at 256 threads: 512
// threads, so that the lowering can keep the row in registers; its
// persistent grid then has one CTA per SM. An elementwise kernel: an
// element grid of 128-thread CTAs. A row reduction alone: 256 in bf16; in
// f32, the fewest threads that keep the row within four chunks a thread.
// CHECK-LABEL: func.func @wider
// CHECK-SAME: ctas = 132 : i64, ctas_per_sm = 1 : i64, grid = "persistent", threads = 512 : i64
// T128-LABEL: func.func @wider
// T128-SAME: ctas = 528 : i64, ctas_per_sm = 4 : i64, grid = "persistent", threads = 128 : i64
func.func @wider(%x: tensor<?x?xbf16>) -> tensor<?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 8192 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %c = tile.reduce sum %xf [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %c : tensor<?xf32>
}
// CHECK-LABEL: func.func @wider_elementwise
// CHECK-SAME: grid = "elements", threads = 128 : i64
func.func @wider_elementwise(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel, tile.specialize = {w0 = 8192 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %y = arith.addf %xf, %xf : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
// CHECK-LABEL: func.func @wider_row_reduction
// CHECK-SAME: threads = 256 : i64
func.func @wider_row_reduction(%x: tensor<?x?xbf16>) -> tensor<?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 8192 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %s = tile.reduce sum %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  return %s : tensor<?xf32>
}
// CHECK-LABEL: func.func @wider_row_reduction_f32
// CHECK-SAME: grid = "rows", threads = 512 : i64
func.func @wider_row_reduction_f32(%x: tensor<?x?xf32>) -> tensor<?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 8192 : i64}} {
  %s = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  return %s : tensor<?xf32>
}
// CHECK-LABEL: func.func @widest_row_reduction_f32
// CHECK-SAME: grid = "rows", threads = 1024 : i64
func.func @widest_row_reduction_f32(%x: tensor<?x?xf32>) -> tensor<?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 16384 : i64}} {
  %s = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  return %s : tensor<?xf32>
}
// CHECK-LABEL: func.func @narrow_row_reduction_f32
// CHECK-SAME: threads = 256 : i64
func.func @narrow_row_reduction_f32(%x: tensor<?x?xf32>) -> tensor<?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 4096 : i64}} {
  %s = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  return %s : tensor<?xf32>
}

// Narrow rows without a reduction: a row of fewer vector chunks than the
// CTA's threads leaves the rest idle, so the CTA takes several rows, in
// groups of two chunks a thread, below a warp if need be (the loop over the
// half-width result then has one). silu_and_mul at 128 bf16 columns: 16
// chunks, 32 rows of 8 threads. At 2048 columns (256 chunks) one row fills
// the CTA.
// CHECK-LABEL: func.func @narrow_no_reduction
// CHECK-SAME: grid = "rows", rows_per_cta = 32 : i64, threads = 256 : i64
func.func @narrow_no_reduction(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel, tile.specialize = {w0 = 128 : i64}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %width = tensor.dim %x, %c1 : tensor<?x?xbf16>
  %h = arith.divui %width, %c2 : index
  %a = tile.slice %x [%c0, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
  %b = tile.slice %x [%h, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
  %af = tile.cast %a : tensor<?x?xbf16> to tensor<?x?xf32>
  %bf = tile.cast %b : tensor<?x?xbf16> to tensor<?x?xf32>
  %y = arith.mulf %af, %bf : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
// CHECK-LABEL: func.func @wide_no_reduction
// CHECK-NOT: rows_per_cta
// CHECK: return
func.func @wide_no_reduction(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16>
    attributes {tile.kernel, tile.specialize = {w0 = 2048 : i64}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %width = tensor.dim %x, %c1 : tensor<?x?xbf16>
  %h = arith.divui %width, %c2 : index
  %a = tile.slice %x [%c0, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
  %b = tile.slice %x [%h, %h] : tensor<?x?xbf16> -> tensor<?x?xbf16>
  %af = tile.cast %a : tensor<?x?xbf16> to tensor<?x?xf32>
  %bf = tile.cast %b : tensor<?x?xbf16> to tensor<?x?xf32>
  %y = arith.mulf %af, %bf : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}

// A row reduction alone at 128 bf16 columns (16 chunks, 128 threads):
// groups of 8 threads, two chunks each, 16 rows a CTA; their exchange is
// three xor shuffles. Across rows the groups stay whole warps: 8 rows of
// 32 threads.
// CHECK-LABEL: func.func @narrow_row_reduction(
// CHECK-SAME: grid = "rows", rows_per_cta = 16 : i64, threads = 128 : i64
func.func @narrow_row_reduction(%x: tensor<?x?xbf16>) -> tensor<?xf32>
    attributes {tile.kernel, tile.specialize = {w0 = 128 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %s = tile.reduce sum %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  return %s : tensor<?xf32>
}
// CHECK-LABEL: func.func @narrow_across
// CHECK-SAME: grid = "persistent", rows_per_cta = 8 : i64, threads = 256 : i64
func.func @narrow_across(%x: tensor<?x?xbf16>) -> (tensor<?xf32>, tensor<?xf32>)
    attributes {tile.kernel, tile.specialize = {w0 = 128 : i64}} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %s = tile.reduce sum %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %c = tile.reduce sum %xf [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %s, %c : tensor<?xf32>, tensor<?xf32>
}

// A user's threads that are not a power of two (96: three warps) keep
// groups of whole warps, or one row per CTA: never a group the lowering
// cannot take (rows_per_cta 16 would be groups of 6).
// RUN: tile-opt %s -tile-schedule=threads=96 | FileCheck %s --check-prefix=T96
// T96-LABEL: func.func @narrow_no_reduction
// T96-NOT: rows_per_cta
// T96-SAME: threads = 96
