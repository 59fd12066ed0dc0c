// RUN: tile-opt %s -split-input-file -verify-diagnostics

// One case per user-facing verifier error of the tile dialect.

//===----------------------------------------------------------------------===//
// tile.cast
//===----------------------------------------------------------------------===//

func.func @cast_shape(%x: tensor<4x?xbf16>) -> tensor<5x?xf32> {
  // expected-error@+1 {{'tile.cast' op requires the same shape for all operands and results}}
  %0 = tile.cast %x : tensor<4x?xbf16> to tensor<5x?xf32>
  return %0 : tensor<5x?xf32>
}

// -----

func.func @cast_to_integer(%x: tensor<?xf32>) -> tensor<?xi64> {
  // expected-error@+1 {{result #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values}}
  %0 = tile.cast %x : tensor<?xf32> to tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

func.func @cast_i8(%x: tensor<?xi8>) -> tensor<?xf32> {
  // expected-error@+1 {{operand #0 must be}}
  %0 = tile.cast %x : tensor<?xi8> to tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @integer_data_read(%x: tensor<?x?xf32>, %labels: tensor<?xi64>)
    -> tensor<?x?xf32> attributes {tile.kernel} {
  // expected-error@+1 {{'arith.addi' op reads the integer tensor argument #1 ('tensor<?xi64>'); integer tensors are read through tile.cast to a float type}}
  %sum = arith.addi %labels, %labels : tensor<?xi64>
  return %x : tensor<?x?xf32>
}

// -----

func.func @iota_shape(%x: tensor<4x?xf32>) -> tensor<5x?xf32> {
  // expected-error@+1 {{'tile.iota' op result shape [5, ?] differs from the shape of the 'like' operand [4, ?]}}
  %0 = tile.iota like %x : tensor<4x?xf32> -> tensor<5x?xf32>
  return %0 : tensor<5x?xf32>
}

// -----

func.func @iota_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error@+1 {{'tile.iota' op needs a tensor of rank 1 or more}}
  %0 = tile.iota like %x : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cast_f64(%x: tensor<?xf32>) -> tensor<?xf64> {
  // expected-error@+1 {{result #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values}}
  %0 = tile.cast %x : tensor<?xf32> to tensor<?xf64>
  return %0 : tensor<?xf64>
}

// -----

//===----------------------------------------------------------------------===//
// tile.splat
//===----------------------------------------------------------------------===//

func.func @splat_shape(%s: f32, %t: tensor<?xf32>) -> tensor<?x?xf32> {
  // expected-error@+1 {{result shape [?, ?] differs from the shape of the 'like' operand [?]}}
  %0 = tile.splat %s like %t : f32, tensor<?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @splat_type(%s: f32, %t: tensor<?xf32>) -> tensor<?xf16> {
  // expected-error@+1 {{value of type 'f32' does not match the result element type 'f16'}}
  %0 = tile.splat %s like %t : f32, tensor<?xf32> -> tensor<?xf16>
  return %0 : tensor<?xf16>
}

// -----

//===----------------------------------------------------------------------===//
// tile.broadcast
//===----------------------------------------------------------------------===//

func.func @broadcast_dim_oob(%r: tensor<?xf32>, %x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error@+1 {{broadcast dimension 2 is out of bounds for rank 2}}
  %0 = tile.broadcast %r [2] like %x : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @broadcast_dims_order(%r: tensor<?xf32>, %x: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  // expected-error@+1 {{broadcast dimensions must be strictly increasing, got [2, 1]}}
  %0 = tile.broadcast %r [2, 1] like %x : tensor<?xf32>, tensor<?x?x?xf32> -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @broadcast_rank(%r: tensor<?x?xf32>, %x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error@+1 {{input of rank 2 plus 1 broadcast dimension(s) does not give the result rank 2}}
  %0 = tile.broadcast %r [1] like %x : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @broadcast_like(%r: tensor<?xf32>, %x: tensor<?x8xf32>) -> tensor<?x?xf32> {
  // expected-error@+1 {{result shape [?, ?] differs from the shape of the 'like' operand [?, 8]}}
  %0 = tile.broadcast %r [1] like %x : tensor<?xf32>, tensor<?x8xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @broadcast_element(%r: tensor<?xbf16>, %x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error@+1 {{input element type 'bf16' differs from the result element type 'f32'}}
  %0 = tile.broadcast %r [1] like %x : tensor<?xbf16>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @broadcast_size(%w: tensor<7xf32>, %x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error@+1 {{input dimension 0 has size 7 but result dimension 1 has size 8}}
  %0 = tile.broadcast %w [0] like %x : tensor<7xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tile.reduce
//===----------------------------------------------------------------------===//

func.func @reduce_dim_oob(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  // expected-error@+1 {{reduction dimension 3 is out of bounds for rank 2}}
  %0 = tile.reduce sum %x [3] : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @reduce_dim_negative(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  // expected-error@+1 {{reduction dimension -1 is out of bounds for rank 2}}
  %0 = tile.reduce sum %x [-1] : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @reduce_dims_repeated(%x: tensor<?x?xf32>) -> tensor<f32> {
  // expected-error@+1 {{reduction dimensions must be strictly increasing, got [1, 1]}}
  %0 = tile.reduce max %x [1, 1] : tensor<?x?xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @reduce_result_shape(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{result shape [8] does not match the input shape without the reduced dimensions, [4]}}
  %0 = tile.reduce mean %x [1] : tensor<4x8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @reduce_element(%x: tensor<?x?xf32>) -> tensor<?xbf16> {
  // expected-error@+1 {{result element type 'bf16' differs from the input's 'f32'}}
  %0 = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xbf16>
  return %0 : tensor<?xbf16>
}

// -----

func.func @reduce_kind(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  // expected-error@+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, mean, max, min]}}
  %0 = tile.reduce prod %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tile.slice
//===----------------------------------------------------------------------===//

func.func @slice_rank0(%x: tensor<f32>, %i: index) -> tensor<f32> {
  // expected-error@+1 {{cannot slice a rank-0 tensor}}
  %0 = tile.slice %x [%i, %i] : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @slice_rank(%x: tensor<?x?xf32>, %i: index) -> tensor<?xf32> {
  // expected-error@+1 {{result rank 1 differs from the input rank 2}}
  %0 = tile.slice %x [%i, %i] : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @slice_leading(%x: tensor<4x?xf32>, %i: index) -> tensor<5x?xf32> {
  // expected-error@+1 {{leading dimensions of the result [5, ?] must equal those of the input [4, ?]}}
  %0 = tile.slice %x [%i, %i] : tensor<4x?xf32> -> tensor<5x?xf32>
  return %0 : tensor<5x?xf32>
}

// -----

func.func @slice_element(%x: tensor<?x?xbf16>, %i: index) -> tensor<?x?xf32> {
  // expected-error@+1 {{result element type 'f32' differs from the input's 'bf16'}}
  %0 = tile.slice %x [%i, %i] : tensor<?x?xbf16> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @slice_negative_offset(%x: tensor<?x?xf32>, %i: index) -> tensor<?x?xf32> {
  %c = arith.constant -1 : index
  // expected-error@+1 {{offset -1 is negative}}
  %0 = tile.slice %x [%c, %i] : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @slice_negative_size(%x: tensor<?x?xf32>, %i: index) -> tensor<?x?xf32> {
  %c = arith.constant -3 : index
  // expected-error@+1 {{size -3 is negative}}
  %0 = tile.slice %x [%i, %c] : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @slice_oob(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  // expected-error@+1 {{range [6, 10) is out of bounds for a last dimension of size 8}}
  %0 = tile.slice %x [%c6, %c4] : tensor<?x8xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @slice_static_result(%x: tensor<?x8xf32>, %i: index) -> tensor<?x4xf32> {
  // expected-error@+1 {{result last dimension 4 must be dynamic or equal the constant size}}
  %0 = tile.slice %x [%i, %i] : tensor<?x8xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tile.concat
//===----------------------------------------------------------------------===//

func.func @concat_empty() -> tensor<?x?xf32> {
  // expected-error@+1 {{needs at least one input}}
  %0 = "tile.concat"() : () -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @concat_rank0(%a: tensor<f32>) -> tensor<f32> {
  // expected-error@+1 {{cannot concatenate rank-0 tensors}}
  %0 = tile.concat %a : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @concat_rank(%a: tensor<?x?xf32>, %b: tensor<?xf32>) -> tensor<?x?xf32> {
  // expected-error@+1 {{input #1 has rank 1 but the result has rank 2}}
  %0 = tile.concat %a, %b : tensor<?x?xf32>, tensor<?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @concat_element(%a: tensor<?x?xf32>, %b: tensor<?x?xf16>) -> tensor<?x?xf32> {
  // expected-error@+1 {{input #1 has element type 'f16' but the result has 'f32'}}
  %0 = tile.concat %a, %b : tensor<?x?xf32>, tensor<?x?xf16> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @concat_leading(%a: tensor<4x?xf32>, %b: tensor<3x?xf32>) -> tensor<4x?xf32> {
  // expected-error@+1 {{leading dimensions of input #1 [3, ?] must equal those of the result [4, ?]}}
  %0 = tile.concat %a, %b : tensor<4x?xf32>, tensor<3x?xf32> -> tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}

// -----

func.func @concat_sum(%a: tensor<?x3xf32>, %b: tensor<?x4xf32>) -> tensor<?x8xf32> {
  // expected-error@+1 {{result last dimension must be 7, the sum of the inputs' last dimensions}}
  %0 = tile.concat %a, %b : tensor<?x3xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @concat_dynamic(%a: tensor<?x?xf32>, %b: tensor<?x4xf32>) -> tensor<?x8xf32> {
  // expected-error@+1 {{result last dimension must be dynamic when an input's last dimension is dynamic}}
  %0 = tile.concat %a, %b : tensor<?x?xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tile.sigmoid
//===----------------------------------------------------------------------===//

func.func @sigmoid_int(%x: tensor<?xi32>) -> tensor<?xi32> {
  // expected-error@+1 {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values}}
  %0 = tile.sigmoid %x : tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

//===----------------------------------------------------------------------===//
// tile.kernel and tile.nograd
//===----------------------------------------------------------------------===//

// expected-error@+1 {{'tile.kernel' must be a unit attribute}}
func.func @kernel_not_unit(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel = 1 : i32} {
  return %x : tensor<?xf32>
}

// -----

// expected-error@+1 {{'tile.kernel' applies to func.func, not 'builtin.module'}}
module attributes {tile.kernel} {}

// -----

// expected-error@+1 {{kernel name 'k6 bwd' is not an identifier: kernels are named with letters, digits, '_' and '$', starting with a letter, or with '_' or '$' and more (the name is the GPU kernel's in PTX)}}
func.func @"k6 bwd"(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  return %x : tensor<?xf32>
}

// -----

// expected-error@+1 {{kernel name '2x' is not an identifier}}
func.func @"2x"(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  return %x : tensor<?xf32>
}

// -----

// expected-error@+1 {{kernel name '_' is not an identifier}}
func.func @_(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  return %x : tensor<?xf32>
}

// -----

// expected-error@+1 {{has 'tile.kernel' but no body (a declaration)}}
func.func private @kernel_external(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel}

// -----

// expected-error@+1 {{kernel argument #1 has unsupported type 'tensor<?xi8>'; kernels take ranked tensors of bf16, f16, f32 (or i32 and i64 data such as labels) and scalar f32, index, i32 or i64 parameters}}
func.func @kernel_arg_i8(%x: tensor<?xf32>, %m: tensor<?xi8>) -> tensor<?xf32> attributes {tile.kernel} {
  return %x : tensor<?xf32>
}

// -----

// expected-error@+1 {{kernel argument #0 has unsupported type 'tensor<?xf64>'}}
func.func @kernel_arg_f64(%x: tensor<?xf64>) -> tensor<?xf32> attributes {tile.kernel} {
  %0 = arith.truncf %x : tensor<?xf64> to tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// expected-error@+1 {{kernel argument #0 has unsupported type 'tensor<*xf32>'}}
func.func @kernel_arg_unranked(%x: tensor<*xf32>) -> tensor<4xf32> attributes {tile.kernel} {
  %0 = arith.constant dense<1.0> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error@+1 {{kernel must return at least one tensor}}
func.func @kernel_no_result(%x: tensor<?xf32>) attributes {tile.kernel} {
  return
}

// -----

// expected-error@+1 {{kernel result #0 has unsupported type 'f32'; kernels return ranked tensors of bf16, f16 or f32}}
func.func @kernel_scalar_result(%x: f32) -> f32 attributes {tile.kernel} {
  return %x : f32
}

// -----

// expected-error@+1 {{has 'tile.kernel' but a body of 2 blocks; it must be a single block}}
func.func @kernel_blocks(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  return %x : tensor<?xf32>
^bb1:
  return %x : tensor<?xf32>
}

// -----

func.func @kernel_unsupported_op(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.kernel} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  // expected-error@+1 {{'tensor.empty' op is not supported in a tile kernel; a kernel holds tile ops, tensor.dim and these: arith.addf, arith.subf,}}
  %e = tensor.empty(%n) : tensor<?xf32>
  return %e : tensor<?xf32>
}

// -----

func.func @kernel_bf16_math(%x: tensor<?xbf16>) -> tensor<?xbf16> attributes {tile.kernel} {
  // expected-error@+1 {{'arith.mulf' op computes in 'tensor<?xbf16>'; tile kernels compute in f32 (convert with tile.cast)}}
  %0 = arith.mulf %x, %x : tensor<?xbf16>
  return %0 : tensor<?xbf16>
}

// -----

// expected-error@+1 {{'tile.nograd' marks a function argument; put it in the argument's attribute dictionary}}
func.func @nograd_on_function(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.nograd} {
  return %x : tensor<?xf32>
}

// -----

// expected-error@+1 {{'tile.nograd' on argument #0 must be a unit attribute}}
func.func @nograd_not_unit(%x: f32 {tile.nograd = false}) -> f32 {
  return %x : f32
}

// -----

// expected-error@+1 {{unknown tile argument attribute 'tile.no_grad' on argument #0}}
func.func @nograd_misspelled(%x: f32 {tile.no_grad}) -> f32 {
  return %x : f32
}

// -----

// expected-error@+1 {{unknown tile attribute 'tile.kernal'}}
func.func @kernel_misspelled(%x: f32) -> f32 attributes {tile.kernal} {
  return %x : f32
}

//===----------------------------------------------------------------------===//
// tile.reduce: across_rows and into
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_rows_unmarked(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  // expected-error@+1 {{'tile.reduce' op reduction over dimensions [0] of a rank-2 tensor combines rows; spell it `across_rows`}}
  %0 = tile.reduce sum %x [0] : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @reduce_row_marked(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  // expected-error@+1 {{'tile.reduce' op is marked `across_rows` but reduces only within a row (dimensions [1] of a rank-2 tensor)}}
  %0 = tile.reduce sum %x [1] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// expected-note@+1 {{prior use here}}
func.func @reduce_into_wrong_type(%x: tensor<?x?xf32>, %acc: tensor<?xf16>) -> tensor<?xf32> {
  // expected-error@+1 {{use of value '%acc' expects different type than prior uses: 'tensor<?xf32>' vs 'tensor<?xf16>'}}
  %0 = tile.reduce sum %x [0] across_rows into %acc : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

//===----------------------------------------------------------------------===//
// tile.pad
//===----------------------------------------------------------------------===//

// -----

func.func @pad_like_shape(%g: tensor<?x?xf32>, %x: tensor<?x8xbf16>, %o: index) -> tensor<?x?xf32> {
  // expected-error@+1 {{'tile.pad' op result shape [?, ?] differs from the shape of the 'like' operand [?, 8]}}
  %0 = tile.pad %g [%o] like %x : tensor<?x?xf32>, tensor<?x8xbf16> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @pad_element_type(%g: tensor<?x?xf32>, %x: tensor<?x?xbf16>, %o: index) -> tensor<?x?xbf16> {
  // expected-error@+1 {{'tile.pad' op result element type 'bf16' differs from the input's 'f32'}}
  %0 = tile.pad %g [%o] like %x : tensor<?x?xf32>, tensor<?x?xbf16> -> tensor<?x?xbf16>
  return %0 : tensor<?x?xbf16>
}

// -----

func.func @pad_leading(%g: tensor<4x?xf32>, %x: tensor<5x?xf32>, %o: index) -> tensor<5x?xf32> {
  // expected-error@+1 {{'tile.pad' op leading dimensions of the input [4, ?] must equal those of the result [5, ?]}}
  %0 = tile.pad %g [%o] like %x : tensor<4x?xf32>, tensor<5x?xf32> -> tensor<5x?xf32>
  return %0 : tensor<5x?xf32>
}

// -----

func.func @pad_out_of_bounds(%g: tensor<?x4xf32>, %x: tensor<?x6xf32>) -> tensor<?x6xf32> {
  %c3 = arith.constant 3 : index
  // expected-error@+1 {{'tile.pad' op range [3, 7) is out of bounds for a last dimension of size 6}}
  %0 = tile.pad %g [%c3] like %x : tensor<?x4xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}

// -----

func.func @pad_negative(%g: tensor<?x4xf32>, %x: tensor<?x6xf32>) -> tensor<?x6xf32> {
  %c = arith.constant -1 : index
  // expected-error@+1 {{'tile.pad' op offset -1 is negative}}
  %0 = tile.pad %g [%c] like %x : tensor<?x4xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}

// -----

func.func @pad_rank0(%g: tensor<f32>, %x: tensor<f32>, %o: index) -> tensor<f32> {
  // expected-error@+1 {{'tile.pad' op cannot pad a rank-0 tensor}}
  %0 = tile.pad %g [%o] like %x : tensor<f32>, tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Recompute policy and derived-function attributes
//===----------------------------------------------------------------------===//

// -----

func.func @save_not_unit(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error@+1 {{'tile.save' must be a unit attribute}}
  %0 = math.exp %x {tile.save = 1} : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @save_bf16(%x: tensor<?xf32>) -> tensor<?xbf16> {
  // expected-error@+1 {{'tile.save' applies to an op with one f32 tensor result}}
  %0 = tile.cast %x {tile.save} : tensor<?xf32> to tensor<?xbf16>
  return %0 : tensor<?xbf16>
}

// -----

func.func @save_and_recompute(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error@+1 {{an op cannot be both 'tile.save' and 'tile.recompute'}}
  %0 = math.exp %x {tile.save, tile.recompute} : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// expected-error@+1 {{'tile.backward_of' must be a symbol reference on a func.func}}
func.func @backward_of_string(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.backward_of = "f"} {
  return %x : tensor<?xf32>
}

// -----

// expected-error@+1 {{'tile.forward_of' marks a derived kernel: the function must carry 'tile.kernel' too}}
func.func @forward_of_plain(%x: tensor<?xf32>) -> tensor<?xf32> attributes {tile.forward_of = @f} {
  return %x : tensor<?xf32>
}

// -----

// expected-error@+1 {{'tile.cotangent' on argument #0 must be a non-negative integer index}}
func.func @cotangent_negative(%x: tensor<?xf32> {tile.cotangent = -1}) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

// -----

// expected-error@+1 {{'tile.gradient' on result #0 must be a non-negative integer index}}
func.func @gradient_unit(%x: tensor<?xf32>) -> (tensor<?xf32> {tile.gradient}) {
  return %x : tensor<?xf32>
}

// -----

// expected-error@+1 {{unknown tile result attribute 'tile.grad' on result #0}}
func.func @result_misspelled(%x: tensor<?xf32>) -> (tensor<?xf32> {tile.grad = 0}) {
  return %x : tensor<?xf32>
}

//===----------------------------------------------------------------------===//
// tile.schedule
//===----------------------------------------------------------------------===//

// -----

// expected-error@+1 {{'tile.schedule' needs threads, a multiple of 32 from 32 to 1024}}
func.func @schedule_threads(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.schedule = {grid = "rows", threads = 100 : i64}} {
  return %x : tensor<?x?xf32>
}

// -----

// expected-error@+1 {{'tile.schedule' needs grid = "elements", "rows" or "persistent"}}
func.func @schedule_grid(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.schedule = {grid = "cols", threads = 128 : i64}} {
  return %x : tensor<?x?xf32>
}

// -----

// expected-error@+1 {{'tile.schedule' grid = "elements" needs a purely elementwise kernel (every tensor [rows, W] of one W, only elementwise ops, casts and splats)}}
func.func @schedule_elements_reduce(%x: tensor<?x?xf32>) -> tensor<?xf32>
    attributes {tile.schedule = {grid = "elements", threads = 128 : i64}} {
  %0 = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// Two independent chains of different widths have no common flat index.
// expected-error@+1 {{'tile.schedule' grid = "elements" needs a purely elementwise kernel}}
func.func @schedule_elements_two_widths(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>)
    attributes {tile.schedule = {grid = "elements", threads = 128 : i64}} {
  %0 = math.exp %x : tensor<?x?xf32>
  %1 = math.exp %y : tensor<?x?xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// expected-error@+1 {{'tile.schedule' grid = "elements" has no rows per CTA}}
func.func @schedule_elements_rows(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.schedule = {grid = "elements", rows_per_cta = 2 : i64, threads = 128 : i64}} {
  return %x : tensor<?x?xf32>
}

// -----

// expected-error@+1 {{'tile.schedule' finalize must be "separate" or "folded"}}
func.func @schedule_finalize_kind(%x: tensor<?x?xf32>) -> tensor<?xf32>
    attributes {tile.schedule = {ctas = 8 : i64, finalize = "later", grid = "persistent", threads = 128 : i64}} {
  %0 = tile.reduce sum %x [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// expected-error@+1 {{'tile.schedule' finalize belongs to a persistent grid}}
func.func @schedule_finalize_rows(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.schedule = {finalize = "separate", grid = "rows", threads = 128 : i64}} {
  return %x : tensor<?x?xf32>
}

// -----

// expected-error@+1 {{'tile.schedule' must be persistent for a kernel that reduces across rows}}
func.func @schedule_not_persistent(%x: tensor<?x?xf32>) -> tensor<?xf32>
    attributes {tile.schedule = {grid = "rows", threads = 128 : i64}} {
  %0 = tile.reduce sum %x [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// expected-error@+1 {{'tile.schedule' needs a positive ctas exactly when the grid is persistent}}
func.func @schedule_ctas(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.schedule = {ctas = 8 : i64, grid = "rows", threads = 128 : i64}} {
  return %x : tensor<?x?xf32>
}

// -----

// expected-error@+1 {{'tile.schedule' has an unknown entry 'vector'}}
func.func @schedule_unknown(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.schedule = {grid = "rows", threads = 128 : i64, vector = 4 : i64}} {
  return %x : tensor<?x?xf32>
}

// -----

// expected-error@+1 {{'tile.specialize' entry 'w1' must be w<i> = width, for tensor argument i}}
func.func @specialize_scalar(%x: tensor<?x?xf32>, %s: f32) -> tensor<?x?xf32>
    attributes {tile.specialize = {w1 = 8 : i64}} {
  return %x : tensor<?x?xf32>
}

// -----

// expected-error@+1 {{'tile.specialize' entry 'x0' must be w<i> = width, for tensor argument i}}
func.func @specialize_name(%x: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {tile.specialize = {x0 = 8 : i64}} {
  return %x : tensor<?x?xf32>
}

// -----

func.func @repeat_not_dividing(%x: tensor<4x10xf32>, %t: tensor<4x4xf32>) -> tensor<4x10xf32> {
  // expected-error@+1 {{'tile.repeat' op input last dimension 4 does not divide the result's 10}}
  %r = tile.repeat %t like %x : tensor<4x4xf32>, tensor<4x10xf32> -> tensor<4x10xf32>
  return %r : tensor<4x10xf32>
}

// -----

func.func @repeat_rows(%x: tensor<4x8xf32>, %t: tensor<3x4xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'tile.repeat' op leading dimensions of the input [3, 4] must equal those of the result [4, 8]}}
  %r = tile.repeat %t like %x : tensor<3x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @swap_halves_odd_block(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c3 = arith.constant 3 : index
  // expected-error@+1 {{'tile.swap_halves' op block 3 must be positive and even}}
  %s = tile.swap_halves %x [%c3] : tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

func.func @swap_halves_not_dividing(%x: tensor<?x12xf32>) -> tensor<?x12xf32> {
  %c8 = arith.constant 8 : index
  // expected-error@+1 {{'tile.swap_halves' op block 8 does not divide the last dimension of size 12}}
  %s = tile.swap_halves %x [%c8] : tensor<?x12xf32>
  return %s : tensor<?x12xf32>
}

//===----------------------------------------------------------------------===//
// tile.contract and tile.contract_rows
//===----------------------------------------------------------------------===//

// -----

func.func @contract_over_2(%x: tensor<?x?xbf16>, %w: tensor<?x?xbf16>) -> tensor<?x?xf32> {
  // expected-error@+1 {{'tile.contract' op contracts over the matrix's dimension 0 or 1, not 2}}
  %0 = tile.contract %x, %w over 2 : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @contract_vector(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>) -> tensor<?x?xf32> {
  // expected-error@+1 {{'tile.contract' op the matrix must be a rank-2 tensor, got 'tensor<?xbf16>'}}
  %0 = tile.contract %x, %w over 1 : tensor<?x?xbf16>, tensor<?xbf16> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @contract_mixed_types(%x: tensor<?x?xbf16>, %w: tensor<?x?xf16>) -> tensor<?x?xf32> {
  // expected-error@+1 {{'tile.contract' op the input ('bf16') and the matrix ('f16') must have one element type: cast one first}}
  %0 = tile.contract %x, %w over 1 : tensor<?x?xbf16>, tensor<?x?xf16> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @contract_bf16_result(%x: tensor<?x?xbf16>, %w: tensor<?x?xbf16>) -> tensor<?x?xbf16> {
  // expected-error@+1 {{'tile.contract' op the result must be f32 (the accumulator), got 'bf16'}}
  %0 = tile.contract %x, %w over 1 : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xbf16>
  return %0 : tensor<?x?xbf16>
}

// -----

func.func @contract_widths(%x: tensor<?x64xbf16>, %w: tensor<?x32xbf16>) -> tensor<?x?xf32> {
  // expected-error@+1 {{'tile.contract' op the input's width 64 differs from the matrix's dimension 1 (32), which `over 1` contracts it with}}
  %0 = tile.contract %x, %w over 1 : tensor<?x64xbf16>, tensor<?x32xbf16> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @contract_result_shape(%x: tensor<8x?xbf16>, %w: tensor<16x?xbf16>) -> tensor<8x32xf32> {
  // expected-error@+1 {{'tile.contract' op result shape [8, 32] should be [8, 16]}}
  %0 = tile.contract %x, %w over 1 : tensor<8x?xbf16>, tensor<16x?xbf16> -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @contract_rows_rows(%a: tensor<8x?xf32>, %b: tensor<9x?xf32>) -> tensor<?x?xf32> {
  // expected-error@+1 {{'tile.contract_rows' op the left's rows (8) differ from the right's (9)}}
  %0 = tile.contract_rows %a, %b across_rows : tensor<8x?xf32>, tensor<9x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @contract_rows_shape(%a: tensor<?x4xf32>, %b: tensor<?x5xf32>) -> tensor<5x4xf32> {
  // expected-error@+1 {{'tile.contract_rows' op result shape [5, 4] should be [4, 5]}}
  %0 = tile.contract_rows %a, %b across_rows : tensor<?x4xf32>, tensor<?x5xf32> -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}

// -----

func.func @contract_rows_accumulator(%a: tensor<?x4xf32>, %b: tensor<?x5xf32>, %acc: tensor<4x6xf32>) -> tensor<4x5xf32> {
  // expected-error@+1 {{'tile.contract_rows' op failed to verify that the accumulator has the result type}}
  %0 = "tile.contract_rows"(%a, %b, %acc) : (tensor<?x4xf32>, tensor<?x5xf32>, tensor<4x6xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}
