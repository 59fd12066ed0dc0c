// RUN: tile-opt %s -tile-differentiate -split-input-file -verify-diagnostics

// What tile-differentiate refuses, each with a diagnostic at the culprit.

func.func @no_rule_remf(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32>
    attributes {tile.kernel} {
  // expected-error@+1 {{'arith.remf' op has no derivative rule}}
  %0 = arith.remf %x, %y : tensor<?xf32>
  %1 = arith.addf %0, %x : tensor<?xf32>
  return %1 : tensor<?xf32>
}

// -----

// An op without a rule is fine where no gradient flows through it.
func.func @inactive_remf(%x: tensor<?xf32>, %m: tensor<?xf32> {tile.nograd})
    -> tensor<?xf32> attributes {tile.kernel} {
  %0 = arith.remf %m, %m : tensor<?xf32>
  %1 = arith.mulf %x, %0 : tensor<?xf32>
  return %1 : tensor<?xf32>
}

// -----

// expected-error@+1 {{'func.func' op argument #1 is a differentiable 'f32' scalar; tile-differentiate derives gradients of tensors only: mark it {tile.nograd} or pass it as a tensor}}
func.func @scalar(%x: tensor<?xf32>, %s: f32) -> tensor<?xf32>
    attributes {tile.kernel} {
  %sv = tile.splat %s like %x : f32, tensor<?xf32> -> tensor<?xf32>
  %0 = arith.mulf %x, %sv : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// expected-error@+1 {{'func.func' op cannot derive @taken_bwd: a symbol of that name already exists}}
func.func @taken(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  return %x : tensor<?xf32>
}
func.func @taken_bwd() {
  return
}

// -----

// expected-error@+1 {{'func.func' op has no differentiable argument (every argument is a scalar or tile.nograd); there is no gradient to derive}}
func.func @nothing(%x: tensor<?xf32> {tile.nograd}, %s: f32 {tile.nograd})
    -> tensor<?xf32> attributes {tile.kernel} {
  return %x : tensor<?xf32>
}

// -----

// A repeated operand that needs a gradient: its adjoint (a sum of the
// repeats) is not expressible yet, so it is refused, not dropped.
func.func @repeat_of_differentiable(%x: tensor<?x?xf32>, %t: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.kernel} {
  // expected-error@+1 {{'tile.repeat' op has no derivative with respect to its repeated input; mark the arguments it comes from tile.nograd}}
  %r = tile.repeat %t like %x : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %x, %r : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
