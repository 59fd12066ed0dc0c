// Attribute verifiers that once crashed every tool at parse time (issue 19):
// each now verifies or gives a located error.
// RUN: tile-opt %s -split-input-file -verify-diagnostics

// tile.specialize on a declaration: checked against the function type, not
// the (absent) body.
func.func private @declared(tensor<?x?xf32>) attributes {tile.specialize = {w0 = 4 : i64}}

// -----

// expected-error@+1 {{has 'tile.schedule' but no body (a declaration)}}
func.func private @declared_schedule(tensor<?x?xf32>) attributes {tile.schedule = {grid = "elements", threads = 128 : i64}}

// -----

// 32 * 2^59 wraps to 0; the bound is checked before the product.
// expected-error@+1 {{'tile.schedule' rows_per_cta must be a power of two that splits the threads into groups of whole warps}}
func.func @wrapping_rows(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel, tile.schedule = {grid = "rows", threads = 128 : i64, rows_per_cta = 576460752303423488 : i64}} {
  return %x : tensor<?x?xf32>
}

// -----

// Groups of 16 threads: a sub-warp group, even on a persistent grid, for a
// kernel without a reduction across rows; that one's group partials need
// whole warps.
func.func @sub_warp_rows(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel, tile.schedule = {grid = "persistent", threads = 128 : i64, ctas = 4 : i64, rows_per_cta = 8 : i64}} {
  return %x : tensor<?x?xf32>
}
// expected-error@+1 {{'tile.schedule' rows_per_cta must be a power of two that splits the threads into groups of whole warps}}
func.func @sub_warp_across(%x: tensor<?x?xf32>) -> tensor<?xf32> attributes {tile.kernel, tile.schedule = {grid = "persistent", threads = 128 : i64, ctas = 4 : i64, rows_per_cta = 8 : i64}} {
  %c = tile.reduce sum %x [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %c : tensor<?xf32>
}

// -----

// 96 threads in 8 groups of 12: neither whole warps nor a power of two.
// expected-error@+1 {{'tile.schedule' rows_per_cta must be a power of two that splits the threads into groups of whole warps}}
func.func @uneven_rows(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel, tile.schedule = {grid = "rows", threads = 96 : i64, rows_per_cta = 8 : i64}} {
  return %x : tensor<?x?xf32>
}

// -----

// A generic-form function without its type: func.func's verifier says so.
// expected-error@+1 {{'func.func' op requires attribute 'function_type'}}
"func.func"() <{sym_name = "untyped"}> ({
^bb0(%x: tensor<?x?xf32>):
  "func.return"(%x) : (tensor<?x?xf32>) -> ()
}) {tile.kernel} : () -> ()

// -----

// Nor its region (found by the structural mutator: the body checks read
// the absent region).
// expected-error@+1 {{'func.func' op requires one region}}
"func.func"() <{function_type = (tensor<?x?xf32>) -> tensor<?x?xf32>, sym_name = "wrap"}> {tile.kernel, tile.schedule = {grid = "rows", threads = 128 : i64}} : () -> ()

// -----

// Nor its name (found by the structural mutator: the kernel verifier's
// message read the absent name).
// expected-error@+1 {{'func.func' op requires attribute 'sym_name'}}
"func.func"() <{function_type = (tensor<?x?xf32>) -> tensor<?x?xi1>}> ({
^bb0(%x: tensor<?x?xf32>):
  %0 = "arith.mulf"(%x, %x) <{fastmath = #arith.fastmath<none>}> : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xi1>
  "func.return"(%0) : (tensor<?x?xi1>) -> ()
}) {tile.kernel} : () -> ()

// -----

func.func @wrapping_slice(%x: tensor<?x8xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  %o = arith.constant 4611686018427387904 : index
  // expected-error@+1 {{'tile.slice' op offset 4611686018427387904 and size 4611686018427387904 are out of bounds for a last dimension of size 8}}
  %y = tile.slice %x [%o, %o] : tensor<?x8xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Found by the parse-verify fuzzer under UBSan: the message itself added
// offset and width.
func.func @wrapping_pad(%g: tensor<?x4xf32>, %x: tensor<?x6xf32>) -> tensor<?x6xf32> attributes {tile.kernel} {
  %o = arith.constant 9223372036854775807 : index
  // expected-error@+1 {{'tile.pad' op offset 9223372036854775807 and size 4 are out of bounds for a last dimension of size 6}}
  %0 = tile.pad %g [%o] like %x : tensor<?x4xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}

// -----

func.func @no_ptx(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  // math.trunc has no derivative rule and no NVVM lowering: one list says no.
  // expected-error@+1 {{'math.trunc' op is not supported in a tile kernel}}
  %y = math.trunc %x : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// A backward's role indices name values of the kernel it was derived from
// (issue 49: a bad cotangent index got an error without a location).
func.func @bad_cotangent_fwd(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  return %x : tensor<?x?xf32>
}
// expected-error @+1 {{argument #1's 'tile.cotangent' = 7 names result #7 of @bad_cotangent_fwd, which has 1 result}}
func.func @bad_cotangent_bwd(%x: tensor<?x?xf32>, %dy: tensor<?x?xf32> {tile.cotangent = 7 : i64}) -> tensor<?x?xf32> attributes {tile.kernel, tile.backward_of = @bad_cotangent_fwd} {
  return %dy : tensor<?x?xf32>
}

// -----

func.func @bad_gradient_fwd(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  return %x : tensor<?x?xf32>
}
// expected-error @+1 {{result #0's 'tile.gradient' = 1 names argument #1 of @bad_gradient_fwd, which has 1 argument}}
func.func @bad_gradient_bwd(%x: tensor<?x?xf32>, %dy: tensor<?x?xf32> {tile.cotangent = 0 : i64}) -> (tensor<?x?xf32> {tile.gradient = 1 : i64}) attributes {tile.kernel, tile.backward_of = @bad_gradient_fwd} {
  return %dy : tensor<?x?xf32>
}

// -----

// The role check runs before func.func's own verifier: attribute arrays
// shorter than the signature (once read past, a crash the fuzzers found)
// are left to it, and a short array's entries are still checked.
"func.func"() <{function_type = (tensor<?x?xf32>) -> tensor<?x?xf32>, sym_name = "short_fwd"}> ({
^bb0(%x: tensor<?x?xf32>):
  "func.return"(%x) : (tensor<?x?xf32>) -> ()
}) {tile.kernel} : () -> ()
// expected-error @+1 {{expects result attribute array to have the same number of elements as the number of function results, got 1, but expected 2}}
"func.func"() <{function_type = (tensor<?x?xf32>, tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>), res_attrs = [{tile.gradient = 0 : i64}], sym_name = "short_bwd"}> ({
^bb0(%x: tensor<?x?xf32>, %dy: tensor<?x?xf32>):
  "func.return"(%x, %dy) : (tensor<?x?xf32>, tensor<?x?xf32>) -> ()
}) {tile.backward_of = @short_fwd, tile.kernel} : () -> ()

// -----

"func.func"() <{function_type = (tensor<?x?xf32>) -> tensor<?x?xf32>, sym_name = "short2_fwd"}> ({
^bb0(%x: tensor<?x?xf32>):
  "func.return"(%x) : (tensor<?x?xf32>) -> ()
}) {tile.kernel} : () -> ()
// expected-error @+1 {{argument #0's 'tile.cotangent' = 3 names result #3 of @short2_fwd, which has 1 result}}
"func.func"() <{arg_attrs = [{tile.cotangent = 3 : i64}], function_type = (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>, sym_name = "short2_bwd"}> ({
^bb0(%x: tensor<?x?xf32>, %dy: tensor<?x?xf32>):
  "func.return"(%dy) : (tensor<?x?xf32>) -> ()
}) {tile.backward_of = @short2_fwd, tile.kernel} : () -> ()
