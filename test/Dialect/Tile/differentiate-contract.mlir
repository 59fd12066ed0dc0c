// RUN: tile-opt %s -tile-differentiate -canonicalize -cse -split-input-file | FileCheck %s --check-prefix=CANON
// RUN: tile-opt %s -tile-differentiate=main-grad -canonicalize -cse -split-input-file | FileCheck %s --check-prefix=MAIN

// The contraction's derivative rules as IR: d input = g · W (a contraction
// over the matrix's other dimension), d W = gᵀ · input (a sum over the
// rows), the cotangent rounded to the operands' type once; under main_grad
// the sum goes into the caller's fp32 buffer; a matrix used twice gets one
// chain of sums.

// CANON-LABEL: func.func @project_bwd
// CANON-SAME: (%[[X:.*]]: tensor<?x?xbf16>, %[[W:.*]]: tensor<?x?xbf16>, %[[G:.*]]: tensor<?x?xf32> {tile.cotangent = 0 : i64})
// CANON: %[[GB:.*]] = tile.cast %[[G]] : tensor<?x?xf32> to tensor<?x?xbf16>
// CANON: %[[DX:.*]] = tile.contract %[[GB]], %[[W]] over 0
// CANON: %[[DW:.*]] = tile.contract_rows %[[GB]], %[[X]] across_rows :
// CANON: %[[DXB:.*]] = tile.cast %[[DX]] : tensor<?x?xf32> to tensor<?x?xbf16>
// CANON: %[[DWB:.*]] = tile.cast %[[DW]] : tensor<?x?xf32> to tensor<?x?xbf16>
// CANON: return %[[DXB]], %[[DWB]]
// MAIN-LABEL: func.func @project_bwd
// MAIN-SAME: %[[MG:[^:]*]]: tensor<?x?xf32> {tile.main_grad = 1 : i64}
// MAIN-SAME: tensor<?x?xf32> {tile.gradient = 1 : i64}
// MAIN: %[[DW:.*]] = tile.contract_rows %{{.*}}, %{{.*}} across_rows into %[[MG]]
// MAIN: return %{{.*}}, %[[DW]]
func.func @project(%x: tensor<?x?xbf16>, %w: tensor<?x?xbf16>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = tile.contract %x, %w over 1
      : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// The other layout: d input = g · Wᵀ, d W = inputᵀ · g.
// CANON-LABEL: func.func @project_by_columns_bwd
// CANON-SAME: (%[[X:.*]]: tensor<?x?xf32>, %[[W:.*]]: tensor<?x?xf32>, %[[G:.*]]: tensor<?x?xf32> {tile.cotangent = 0 : i64})
// CANON-DAG: tile.contract %[[G]], %[[W]] over 1
// CANON-DAG: tile.contract_rows %[[X]], %[[G]] across_rows :
func.func @project_by_columns(%x: tensor<?x?xf32>, %w: tensor<?x?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = tile.contract %x, %w over 0
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// A tied matrix: both uses' sums in one chain, the first link into
// main_grad.
// MAIN-LABEL: func.func @tied_bwd
// MAIN-SAME: %[[MG:[^:]*]]: tensor<?x?xf32> {tile.main_grad = 1 : i64}
// MAIN: %[[FIRST:.*]] = tile.contract_rows %{{.*}}, %{{.*}} across_rows into %[[MG]]
// MAIN: %[[BOTH:.*]] = tile.contract_rows %{{.*}}, %{{.*}} across_rows into %[[FIRST]]
// MAIN: return %{{.*}}, %[[BOTH]]
func.func @tied(%x: tensor<?x?xbf16>, %w: tensor<?x?xbf16>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = tile.contract %x, %w over 1
      : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  %z = tile.contract %yb, %w over 0
      : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  return %z : tensor<?x?xf32>
}

// -----

// The rows' outer products differentiated (a second derivative's form):
// d left = right · Gᵀ, d right = left · G.
// CANON-LABEL: func.func @outer_products_bwd
// CANON-SAME: (%[[A:.*]]: tensor<?x?xf32>, %[[B:.*]]: tensor<?x?xf32>, %[[G:.*]]: tensor<?x?xf32> {tile.cotangent = 0 : i64})
// CANON-DAG: tile.contract %[[B]], %[[G]] over 1
// CANON-DAG: tile.contract %[[A]], %[[G]] over 0
func.func @outer_products(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %r = tile.contract_rows %a, %b across_rows
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// Sizes known on one side and not the other: each gradient has its
// argument's type (the input's, the matrix's), and main_grad's sum takes
// the accumulator's.
// CANON-LABEL: func.func @mixed_sizes_bwd
// CANON-SAME: -> (tensor<?x4096xbf16> {tile.gradient = 0 : i64}, tensor<16x4096xbf16> {tile.gradient = 1 : i64})
// CANON: tile.contract %{{.*}}, %{{.*}} over 0 : tensor<?x?xbf16>, tensor<16x4096xbf16> -> tensor<?x4096xf32>
// CANON: tile.contract_rows %{{.*}}, %{{.*}} across_rows : tensor<?x?xbf16>, tensor<?x4096xbf16> -> tensor<16x4096xf32>
// MAIN-LABEL: func.func @mixed_sizes_bwd
// MAIN: tile.contract_rows %{{.*}}, %{{.*}} across_rows into %{{.*}} : tensor<?x?xbf16>, tensor<?x4096xbf16> -> tensor<16x4096xf32>
func.func @mixed_sizes(%x: tensor<?x4096xbf16>, %w: tensor<16x4096xbf16>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = tile.contract %x, %w over 1
      : tensor<?x4096xbf16>, tensor<16x4096xbf16> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// MAIN-LABEL: func.func @dynamic_matrix_bwd
// MAIN: tile.contract_rows %{{.*}}, %{{.*}} across_rows into %{{.*}} : tensor<?x?xbf16>, tensor<?x4096xbf16> -> tensor<?x?xf32>
func.func @dynamic_matrix(%x: tensor<?x4096xbf16>, %w: tensor<?x?xbf16>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  %y = tile.contract %x, %w over 1
      : tensor<?x4096xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
