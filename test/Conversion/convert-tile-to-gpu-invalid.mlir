// RUN: tile-opt %s -convert-tile-to-gpu -split-input-file -verify-diagnostics
// RUN: %expect-error tile-opt -tile-schedule=threads=100 %tile_src/examples/swiglu.mlir

// What the GPU lowering does not handle yet says so, at the op.

// Rank 3 is the verifier's to reject (test/Dialect/Tile/kernel-rank.mlir).
// expected-error@+1 {{kernel argument #0 has rank 3}}
func.func @rank3(%x: tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
    attributes {tile.kernel} {
  return %x : tensor<?x?x?xf32>
}

// -----

func.func @mixed(%x: tensor<?x?xf32>, %w: tensor<?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  %wb = tile.broadcast %w [0] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %r = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  // expected-error@+1 {{'arith.addf' op mixes per-row and per-column values; broadcast one of them first}}
  %bad = arith.addf %r, %w : tensor<?xf32>
  %bb = tile.broadcast %bad [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %wb, %bb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// A cross-row result read back by the rows (the derived backward of a
// column maximum does this): the error says why it cannot be, where the
// old one said to broadcast what was already broadcast.
func.func @rows_read_a_cross_row_max(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  // expected-error@+1 {{'tile.reduce' op makes a cross-row result (complete only after every row), which rows of the same kernel read; the GPU lowering computes cross-row results last, in the finalize: return it, and use it in a second kernel}}
  %m = tile.reduce max %x [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  // expected-note@+1 {{read by the rows here}}
  %mb = tile.broadcast %m [0] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.subf %x, %mb : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// A contraction (issue 62): evaluated and differentiated, not yet lowered;
// the lowering says so instead of treating the matrix as rows.
func.func @contraction(%x: tensor<?x?xbf16>, %w: tensor<?x?xbf16>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  // expected-error@+1 {{'tile.contract' op is a contraction, which the GPU lowering does not handle yet (issue 62); tile-run evaluates, differentiates and gradient-checks it}}
  %y = tile.contract %x, %w over 1
      : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
