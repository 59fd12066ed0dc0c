// Every derivative rule, numerically: each function exercises a family of
// ops and is checked against finite differences at two shapes.
//
// RUN: tile-run %s --gradient-check --function=arith_ops --args=MxN,MxN --rows=3 --widths=1,17 | FileCheck %s --check-prefix=TWO
// RUN: tile-run %s --gradient-check --function=positive_math --low=0.25 --high=2 --args=MxN --rows=3 --widths=1,17 | FileCheck %s --check-prefix=ONE
// RUN: tile-run %s --gradient-check --function=signed_math --args=MxN,MxN --rows=3 --widths=1,17 | FileCheck %s --check-prefix=TWO
// RUN: tile-run %s --gradient-check --function=reductions --args=MxN,N --rows=3 --widths=1,17 | FileCheck %s --check-prefix=TWO
// RUN: tile-run %s --gradient-check --function=reductions --main-grad --args=MxN,N --rows=3 --widths=1,17 | FileCheck %s --check-prefix=TWO
// RUN: tile-run %s --gradient-check --function=rows_and_pieces --args=MxN,MxN --rows=3 --widths=1,17 | FileCheck %s --check-prefix=TWO
//
// ONE: 2 gradients checked, 0 failed
// TWO: 4 gradients checked, 0 failed

// add, sub, mul, div, neg, max/min (both NaN flavours), select, compare.
func.func @arith_ops(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %two = arith.constant 2.0 : f32
  %tv = tile.splat %two like %a : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %den = arith.addf %tv, %b : tensor<?x?xf32>
  %q = arith.divf %a, %den : tensor<?x?xf32>
  %d = arith.subf %q, %b : tensor<?x?xf32>
  %n = arith.negf %d : tensor<?x?xf32>
  %mx = arith.maximumf %n, %a : tensor<?x?xf32>
  %mn = arith.minimumf %mx, %b : tensor<?x?xf32>
  %mxn = arith.maxnumf %mn, %q : tensor<?x?xf32>
  %mnn = arith.minnumf %mxn, %tv : tensor<?x?xf32>
  %lt = arith.cmpf olt, %a, %b : tensor<?x?xf32>
  %sel = arith.select %lt, %mnn, %q : tensor<?x?xi1>, tensor<?x?xf32>
  %y = arith.mulf %sel, %a : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// Functions of positive arguments.
func.func @positive_math(%x: tensor<?x?xf16>) -> tensor<?x?xf16>
    attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xf16> to tensor<?x?xf32>
  %l = math.log %xf : tensor<?x?xf32>
  %l2 = math.log2 %xf : tensor<?x?xf32>
  %l10 = math.log10 %xf : tensor<?x?xf32>
  %l1p = math.log1p %xf : tensor<?x?xf32>
  %s = math.sqrt %xf : tensor<?x?xf32>
  %r = math.rsqrt %xf : tensor<?x?xf32>
  %p = math.powf %xf, %s : tensor<?x?xf32>
  %a1 = arith.addf %l, %l2 : tensor<?x?xf32>
  %a2 = arith.addf %l10, %l1p : tensor<?x?xf32>
  %a3 = arith.addf %s, %r : tensor<?x?xf32>
  %a4 = arith.addf %a1, %a2 : tensor<?x?xf32>
  %a5 = arith.addf %a3, %p : tensor<?x?xf32>
  %y = arith.addf %a4, %a5 : tensor<?x?xf32>
  %yh = tile.cast %y : tensor<?x?xf32> to tensor<?x?xf16>
  return %yh : tensor<?x?xf16>
}

// Functions of any sign; floor passes no gradient.
func.func @signed_math(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %e = math.exp %x : tensor<?x?xf32>
  %e2 = math.exp2 %z : tensor<?x?xf32>
  %em1 = math.expm1 %x : tensor<?x?xf32>
  %t = math.tanh %z : tensor<?x?xf32>
  %er = math.erf %x : tensor<?x?xf32>
  %s = math.sin %z : tensor<?x?xf32>
  %c = math.cos %x : tensor<?x?xf32>
  %ab = math.absf %z : tensor<?x?xf32>
  %fl = math.floor %x : tensor<?x?xf32>
  %sg = tile.sigmoid %z : tensor<?x?xf32>
  %f = math.fma %e, %t, %er : tensor<?x?xf32>
  %a1 = arith.addf %e2, %em1 : tensor<?x?xf32>
  %a2 = arith.addf %s, %c : tensor<?x?xf32>
  %a3 = arith.addf %ab, %fl : tensor<?x?xf32>
  %a4 = arith.addf %a1, %a2 : tensor<?x?xf32>
  %a5 = arith.addf %a3, %sg : tensor<?x?xf32>
  %a6 = arith.addf %a4, %a5 : tensor<?x?xf32>
  %y = arith.addf %a6, %f : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// Every reduction kind, within rows and across them, and broadcasts back.
func.func @reductions(%x: tensor<?x?xf32>, %w: tensor<?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>) attributes {tile.kernel} {
  %s = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %m = tile.reduce mean %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mx = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mn = tile.reduce min %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sm = arith.mulf %s, %m : tensor<?xf32>
  %mm = arith.mulf %mx, %mn : tensor<?xf32>
  %rows = arith.addf %sm, %mm : tensor<?xf32>
  %rb = tile.broadcast %rows [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %wb = tile.broadcast %w [0] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %p = arith.mulf %rb, %wb : tensor<?x?xf32>
  %y = arith.mulf %p, %x : tensor<?x?xf32>
  %cols = tile.reduce mean %y [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  %cmax = tile.reduce max %y [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  %c = arith.addf %cols, %cmax : tensor<?xf32>
  %cw = arith.mulf %c, %w : tensor<?xf32>
  return %y, %cw : tensor<?x?xf32>, tensor<?xf32>
}

// Casts through f16 and bf16, slices, concatenation and padding.
func.func @rows_and_pieces(%a: tensor<?x?xbf16>, %b: tensor<?x?xf32>)
    -> tensor<?x?xf16> attributes {tile.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %af = tile.cast %a : tensor<?x?xbf16> to tensor<?x?xf32>
  %w = tensor.dim %b, %c1 : tensor<?x?xf32>
  %j = tile.concat %af, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %s = tile.sigmoid %j : tensor<?x?xf32>
  %p = arith.mulf %s, %j : tensor<?x?xf32>
  %left = tile.slice %p [%c0, %w] : tensor<?x?xf32> -> tensor<?x?xf32>
  %right = tile.slice %p [%w, %w] : tensor<?x?xf32> -> tensor<?x?xf32>
  %lr = arith.mulf %left, %right : tensor<?x?xf32>
  %padded = tile.pad %lr [%c1] like %j
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %sum = arith.addf %padded, %j : tensor<?x?xf32>
  %h = tile.cast %sum : tensor<?x?xf32> to tensor<?x?xf16>
  return %h : tensor<?x?xf16>
}
