// What a Tile attribute verifier says of a malformed body: MLIR runs the
// dialect's attribute verifiers before func.func's own, so each checks the
// body it reads itself (KernelVerifier.h, verifyFunctionBody). These once
// crashed every tool at parse time (issue 50); structure_sweep.py
// (function-structure.test) runs every attribute on every shape through
// every tool.
// RUN: tile-opt %s -split-input-file -verify-diagnostics

// The two-line input of issue 50: a kernel whose block lacks its argument.
// expected-error@+1 {{'func.func' op has 'tile.kernel' but its block has 0 arguments where its signature has 1}}
func.func @f(tensor<?x?xf32>) -> (tensor<?x?xf32>) attributes {tile.kernel} {
}

// -----

// An entry block without the signature's arguments that branches to itself.
// expected-error@+1 {{'func.func' op has 'tile.kernel' but its block has 0 arguments where its signature has 1}}
"func.func"() <{function_type = (tensor<?x?xf32>) -> tensor<?x?xf32>, sym_name = "f"}> ({
^bb0:
  "cf.br"()[^bb0] : () -> ()
}) {tile.kernel} : () -> ()

// -----

"func.func"() <{function_type = (tensor<?x?xf32>) -> tensor<?x?xf32>, sym_name = "f"}> ({
// expected-error@+1 {{block argument #0 of @f has type 'tensor<?xf32>' where its signature has 'tensor<?x?xf32>'}}
^bb0(%x: tensor<?xf32>):
  "func.return"(%x) : (tensor<?xf32>) -> ()
}) {tile.kernel} : () -> ()

// -----

// expected-error@+1 {{'func.func' op has 'tile.kernel' but its block does not end in func.return}}
"func.func"() <{function_type = (tensor<?x?xf32>) -> tensor<?x?xf32>, sym_name = "f"}> ({
^bb0(%x: tensor<?x?xf32>):
  "func.return"(%x) : (tensor<?x?xf32>) -> ()
  %y = "math.tanh"(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32>
}) {tile.kernel} : () -> ()

// -----

// tile.schedule reads the body too, with or without tile.kernel.
"func.func"() <{function_type = (tensor<?x?xf32>) -> tensor<?x?xf32>, sym_name = "f"}> ({
^bb0(%x: tensor<?x?xf32>):
  // expected-error@+1 {{'func.return' op returns () where the signature of @f has ('tensor<?x?xf32>')}}
  "func.return"() : () -> ()
}) {tile.schedule = {grid = "rows", threads = 128 : i64}} : () -> ()

// -----

// expected-error@+1 {{'func.func' op has 'tile.kernel' but a body of 2 blocks; it must be a single block}}
"func.func"() <{function_type = (tensor<?x?xf32>) -> tensor<?x?xf32>, sym_name = "f"}> ({
^bb0(%x: tensor<?x?xf32>):
  "func.return"(%x) : (tensor<?x?xf32>) -> ()
^bb1:
  "func.return"(%x) : (tensor<?x?xf32>) -> ()
}) {tile.schedule = {grid = "elements", threads = 128 : i64}, tile.kernel} : () -> ()

// -----

// expected-error@+1 {{'func.func' op has 'tile.kernel' but no body (a declaration)}}
"func.func"() <{function_type = (tensor<?x?xf32>) -> tensor<?x?xf32>, sym_name = "f", sym_visibility = "private"}> ({
}) {tile.kernel, tile.schedule = {grid = "persistent", threads = 128 : i64, ctas = 4 : i64}, tile.specialize = {w0 = 4 : i64}} : () -> ()
