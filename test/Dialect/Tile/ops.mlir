// RUN: tile-opt %s | tile-opt | FileCheck %s
// RUN: tile-opt %s --mlir-print-op-generic | tile-opt | FileCheck %s
// RUN: tile-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Every tile op, parsed, printed and parsed again in custom and generic form.

// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xbf16>, %[[H:.*]]: tensor<4x?xf16>)
// CHECK: %[[F:.*]] = tile.cast %[[X]] : tensor<?x?xbf16> to tensor<?x?xf32>
// CHECK: tile.cast %[[F]] : tensor<?x?xf32> to tensor<?x?xf16>
// CHECK: tile.cast %[[H]] : tensor<4x?xf16> to tensor<4x?xf32>
// GENERIC-LABEL: sym_name = "cast"
// GENERIC: "tile.cast"(%{{.*}}) : (tensor<?x?xbf16>) -> tensor<?x?xf32>
func.func @cast(%x: tensor<?x?xbf16>, %h: tensor<4x?xf16>)
    -> (tensor<?x?xf16>, tensor<4x?xf32>) {
  %f = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %g = tile.cast %f : tensor<?x?xf32> to tensor<?x?xf16>
  %k = tile.cast %h : tensor<4x?xf16> to tensor<4x?xf32>
  return %g, %k : tensor<?x?xf16>, tensor<4x?xf32>
}

// CHECK-LABEL: func.func @splat
// CHECK-SAME: (%[[S:.*]]: f32, %[[T:.*]]: tensor<?xf32>)
// CHECK: tile.splat %[[S]] like %[[T]] : f32, tensor<?xf32> -> tensor<?xf32>
// GENERIC-LABEL: sym_name = "splat"
// GENERIC: "tile.splat"(%{{.*}}, %{{.*}}) : (f32, tensor<?xf32>) -> tensor<?xf32>
func.func @splat(%s: f32, %t: tensor<?xf32>) -> tensor<?xf32> {
  %0 = tile.splat %s like %t : f32, tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// CHECK-LABEL: func.func @broadcast
// CHECK-SAME: (%[[R:.*]]: tensor<?xf32>, %[[X:.*]]: tensor<?x?xf32>, %[[W:.*]]: tensor<8xf32>, %[[Y:.*]]: tensor<?x8xbf16>)
// CHECK: tile.broadcast %[[R]] [1] like %[[X]] : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK: tile.broadcast %[[W]] [0] like %[[Y]] : tensor<8xf32>, tensor<?x8xbf16> -> tensor<?x8xf32>
// GENERIC-LABEL: sym_name = "broadcast"
// GENERIC: "tile.broadcast"(%{{.*}}, %{{.*}}) <{dims = array<i64: 1>}>
func.func @broadcast(%r: tensor<?xf32>, %x: tensor<?x?xf32>, %w: tensor<8xf32>,
                     %y: tensor<?x8xbf16>) -> (tensor<?x?xf32>, tensor<?x8xf32>) {
  %0 = tile.broadcast %r [1] like %x : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %1 = tile.broadcast %w [0] like %y : tensor<8xf32>, tensor<?x8xbf16> -> tensor<?x8xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<?x8xf32>
}

// CHECK-LABEL: func.func @reduce
// CHECK: tile.reduce sum %{{.*}} [1] : tensor<?x?xf32> -> tensor<?xf32>
// CHECK: tile.reduce mean %{{.*}} [1] : tensor<?x?xf32> -> tensor<?xf32>
// CHECK: tile.reduce max %{{.*}} [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
// CHECK: tile.reduce min %{{.*}} [0, 1] across_rows : tensor<?x?xf32> -> tensor<f32>
// CHECK: tile.reduce sum %{{.*}} [0] across_rows into %{{.*}} : tensor<?x?xf32> -> tensor<?xf32>
// GENERIC-LABEL: sym_name = "reduce"
// GENERIC: "tile.reduce"(%{{.*}}) <{dims = array<i64: 1>, kind = 0 : i32}>
// GENERIC: "tile.reduce"(%{{.*}}) <{across_rows, dims = array<i64: 0>, kind = 2 : i32}>
func.func @reduce(%x: tensor<?x?xf32>, %acc: tensor<?xf32>)
    -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<f32>, tensor<?xf32>) {
  %0 = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %1 = tile.reduce mean %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %2 = tile.reduce max %x [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  %3 = tile.reduce min %x [0, 1] across_rows : tensor<?x?xf32> -> tensor<f32>
  %4 = tile.reduce sum %x [0] across_rows into %acc : tensor<?x?xf32> -> tensor<?xf32>
  return %0, %1, %2, %3, %4 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<f32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @pad
// CHECK: tile.pad %{{.*}}[%{{.*}}] like %{{.*}} : tensor<?x?xf32>, tensor<?x?xbf16> -> tensor<?x?xf32>
func.func @pad(%g: tensor<?x?xf32>, %x: tensor<?x?xbf16>, %h: index) -> tensor<?x?xf32> {
  %0 = tile.pad %g [%h] like %x : tensor<?x?xf32>, tensor<?x?xbf16> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xbf16>, %[[O:.*]]: index, %[[N:.*]]: index,
// CHECK: tile.slice %[[X]][%[[O]], %[[N]]] : tensor<?x?xbf16> -> tensor<?x?xbf16>
// CHECK: tile.slice %{{.*}}[%{{.*}}, %{{.*}}] : tensor<3x8xf32> -> tensor<3x4xf32>
// GENERIC-LABEL: sym_name = "slice"
// GENERIC: "tile.slice"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x?xbf16>, index, index) -> tensor<?x?xbf16>
func.func @slice(%x: tensor<?x?xbf16>, %o: index, %n: index, %s: tensor<3x8xf32>)
    -> (tensor<?x?xbf16>, tensor<3x4xf32>) {
  %0 = tile.slice %x [%o, %n] : tensor<?x?xbf16> -> tensor<?x?xbf16>
  %c4 = arith.constant 4 : index
  %1 = tile.slice %s [%c4, %c4] : tensor<3x8xf32> -> tensor<3x4xf32>
  return %0, %1 : tensor<?x?xbf16>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @concat
// CHECK: tile.concat %{{.*}}, %{{.*}} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK: tile.concat %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x3xf16>, tensor<2x1xf16>, tensor<2x3xf16> -> tensor<2x7xf16>
// GENERIC-LABEL: sym_name = "concat"
// GENERIC: "tile.concat"(%{{.*}}, %{{.*}}) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
func.func @concat(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<2x3xf16>,
                  %d: tensor<2x1xf16>) -> (tensor<?x?xf32>, tensor<2x7xf16>) {
  %0 = tile.concat %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %1 = tile.concat %c, %d, %c : tensor<2x3xf16>, tensor<2x1xf16>, tensor<2x3xf16> -> tensor<2x7xf16>
  return %0, %1 : tensor<?x?xf32>, tensor<2x7xf16>
}

// CHECK-LABEL: func.func @sigmoid
// CHECK: tile.sigmoid %{{.*}} : tensor<?x?xf32>
// GENERIC-LABEL: sym_name = "sigmoid"
// GENERIC: "tile.sigmoid"(%{{.*}}) : (tensor<?x?xf32>) -> tensor<?x?xf32>
func.func @sigmoid(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = tile.sigmoid %x : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// A kernel with the markers: tile.kernel on the function, tile.nograd on a
// parameter.
// CHECK-LABEL: func.func @kernel
// CHECK-SAME: %{{.*}}: f32 {tile.nograd}
// CHECK-SAME: attributes {tile.kernel}
func.func @kernel(%x: tensor<?x?xf16>, %s: f32 {tile.nograd}) -> tensor<?x?xf16>
    attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xf16> to tensor<?x?xf32>
  %sv = tile.splat %s like %xf : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %xf, %sv : tensor<?x?xf32>
  %yh = tile.cast %y : tensor<?x?xf32> to tensor<?x?xf16>
  return %yh : tensor<?x?xf16>
}

// CHECK-LABEL: func.func @repeat_and_swap_halves
// CHECK: tile.repeat %{{.*}} like %{{.*}} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK: tile.swap_halves %{{.*}}[%{{.*}}] : tensor<?x?xf32>
// GENERIC-LABEL: sym_name = "repeat_and_swap_halves"
// GENERIC: "tile.repeat"
// GENERIC: "tile.swap_halves"
func.func @repeat_and_swap_halves(%x: tensor<?x?xf32>, %t: tensor<?x?xf32>,
                                  %b: index) -> tensor<?x?xf32> {
  %r = tile.repeat %t like %x : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %s = tile.swap_halves %r [%b] : tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// CHECK-LABEL: func.func @contractions
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xbf16>, %[[W:.*]]: tensor<?x4096xbf16>, %[[M:.*]]: tensor<4096x?xf32>)
// CHECK: %[[Y:.*]] = tile.contract %[[X]], %[[W]] over 1 : tensor<?x?xbf16>, tensor<?x4096xbf16> -> tensor<?x?xf32>
// CHECK: %[[Z:.*]] = tile.contract %[[Y]], %[[M]] over 0 : tensor<?x?xf32>, tensor<4096x?xf32> -> tensor<?x?xf32>
// CHECK: %[[R:.*]] = tile.contract_rows %[[Y]], %[[Z]] across_rows : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK: tile.contract_rows %[[Y]], %[[Z]] across_rows into %[[R]] : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
// GENERIC-LABEL: sym_name = "contractions"
// GENERIC: "tile.contract"(%{{.*}}, %{{.*}}) <{over = 1 : i64}>
// GENERIC: "tile.contract_rows"(%{{.*}}, %{{.*}}) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
func.func @contractions(%x: tensor<?x?xbf16>, %w: tensor<?x4096xbf16>,
                        %m: tensor<4096x?xf32>) -> tensor<?x?xf32> {
  %y = tile.contract %x, %w over 1
      : tensor<?x?xbf16>, tensor<?x4096xbf16> -> tensor<?x?xf32>
  %z = tile.contract %y, %m over 0
      : tensor<?x?xf32>, tensor<4096x?xf32> -> tensor<?x?xf32>
  %r = tile.contract_rows %y, %z across_rows
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %s = tile.contract_rows %y, %z across_rows into %r
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}
