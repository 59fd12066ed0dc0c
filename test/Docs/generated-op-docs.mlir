// The op reference generated from ODS documents every op with its example.
// RUN: FileCheck %s < %tile_obj/docs/Dialects/TileDialect.md

// CHECK: tile.broadcast
// CHECK: _Replicates a tensor along new dimensions_
// CHECK: tile.cast
// CHECK: tile.concat
// CHECK: tile.reduce
// CHECK: tile.sigmoid
// CHECK: tile.slice
// CHECK: tile.splat
