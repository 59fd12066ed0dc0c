//===- FloatFormats.h - bit-exact bf16 / f16 / f32 rounding -----*- C++ -*-===//
//
// The reference evaluator works in float64 but must round exactly where the
// GPU does: at casts and at kernel inputs and outputs. These helpers convert
// with round-to-nearest-even, as PTX's cvt.rn does, without depending on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_INTERP_FLOATFORMATS_H
#define TILE_INTERP_FLOATFORMATS_H

#include <cstdint>

namespace tile::interp {

/// float -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN.
uint16_t floatToBF16Bits(float value);
float bf16BitsToFloat(uint16_t bits);

/// float -> IEEE binary16 bits, round to nearest even, with subnormals;
/// values beyond the largest finite half round to infinity.
uint16_t floatToF16Bits(float value);
float f16BitsToFloat(uint16_t bits);

/// The storage types a kernel reads and writes.
enum class StorageType { BF16, F16, F32, F64 };

/// Rounds `value` to `type` the way the GPU would: first to f32 (the GPU
/// computes in f32), then to the storage type. F64 leaves it unchanged.
double roundTo(StorageType type, double value);

} // namespace tile::interp

#endif // TILE_INTERP_FLOATFORMATS_H
