// The op reference generated from ODS documents every op with its example.
// RUN: FileCheck %s < %tile_obj/docs/Dialects/TileDialect.md

// CHECK: tile.broadcast
// CHECK: _Replicates a tensor along new dimensions_
// CHECK: tile.cast
// CHECK: tile.concat
// CHECK: tile.contract
// CHECK: _Multiplies a row tile by a matrix: a projection_
// CHECK: tile.contract_rows
// CHECK: across_rows
// CHECK: tile.pad
// CHECK: _Places a tensor into a zero row range of a wider one_
// CHECK: tile.reduce
// CHECK: across_rows
// CHECK: tile.sigmoid
// CHECK: tile.slice
// CHECK: tile.splat

// The pass reference, generated from Passes.td, documents its options.
// RUN: FileCheck %s --check-prefix=PASS < %tile_obj/docs/Passes/TilePasses.md
// PASS: -tile-differentiate
// PASS: -policy
// PASS: -main-grad
// PASS: -row-width-hint
