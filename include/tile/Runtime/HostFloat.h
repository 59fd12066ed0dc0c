//===- HostFloat.h - bf16 and f16 on the host -------------------*- C++ -*-===//
//
// The 16-bit storage formats as the host sees them: rounding a float to the
// bits a bf16/f16 buffer holds (nearest even, as the GPU's cvt.rn) and back.
// For programs that fill and read device buffers without MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_RUNTIME_HOSTFLOAT_H
#define TILE_RUNTIME_HOSTFLOAT_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tile::rt {

inline uint16_t toBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits += 0x7FFF + ((bits >> 16) & 1); // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

inline float fromBF16(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Round to nearest even, normal and subnormal; no overflow to infinity
/// (callers keep values in range).
inline uint16_t toF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t sign = (bits >> 16) & 0x8000;
  int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xFF) - 127 + 15;
  uint32_t mantissa = bits & 0x7FFFFF;
  if (exponent <= 0) {
    if (exponent < -10)
      return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exponent);
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return static_cast<uint16_t>(sign | half);
}

inline float fromF16(uint16_t value) {
  uint32_t sign = (value & 0x8000u) << 16;
  uint32_t exponent = (value >> 10) & 0x1F;
  uint32_t mantissa = value & 0x3FF;
  float result;
  if (exponent == 0)
    result = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    result = mantissa ? NAN : INFINITY;
  else
    result = std::ldexp(static_cast<float>(mantissa | 0x400),
                        static_cast<int>(exponent) - 25);
  uint32_t bits;
  std::memcpy(&bits, &result, 4);
  bits |= sign;
  std::memcpy(&result, &bits, 4);
  return result;
}

} // namespace tile::rt

#endif // TILE_RUNTIME_HOSTFLOAT_H
