//===- FloatFormats.cpp - bit-exact bf16 / f16 / f32 rounding ------------===//

#include "tile/Interp/FloatFormats.h"

#include <cmath>
#include <cstring>

namespace tile::interp {

namespace {
uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}
} // namespace

uint16_t floatToBF16Bits(float value) {
  uint32_t bits = bitsOf(value);
  if (std::isnan(value))
    return static_cast<uint16_t>((bits >> 16) | 0x0040); // keep it quiet
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even;
  // a carry out of the mantissa correctly bumps the exponent (up to inf).
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16BitsToFloat(uint16_t bits) {
  return floatOf(static_cast<uint32_t>(bits) << 16);
}

uint16_t floatToF16Bits(float value) {
  uint32_t bits = bitsOf(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude >= 0x7f800000) // inf or NaN
    return sign | (magnitude > 0x7f800000 ? 0x7e00 : 0x7c00);
  if (magnitude >= 0x477ff000) // >= 65520 rounds to infinity
    return sign | 0x7c00;
  if (magnitude < 0x38800000) {
    // Below 2^-14 the half is subnormal: value = m * 2^-24. Scaling by a
    // power of two is exact, and nearbyint rounds ties to even.
    float scaled = floatOf(magnitude) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t mantissa = magnitude & 0x7fffff;
  uint32_t exponent = (magnitude >> 23) - 127 + 15;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  uint32_t dropped = mantissa & 0x1fff;
  if (dropped > 0x1000 || (dropped == 0x1000 && (half & 1)))
    ++half; // a carry into the exponent is the correct next binade
  return sign | static_cast<uint16_t>(half);
}

float f16BitsToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0) {
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f)
    return floatOf(sign | 0x7f800000 | (mantissa << 13));
  return floatOf(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

double roundTo(StorageType type, double value) {
  switch (type) {
  case StorageType::F64:
    return value;
  case StorageType::F32:
    return static_cast<float>(value);
  case StorageType::BF16:
    return bf16BitsToFloat(floatToBF16Bits(static_cast<float>(value)));
  case StorageType::F16:
    return f16BitsToFloat(floatToF16Bits(static_cast<float>(value)));
  }
  return value;
}

} // namespace tile::interp
