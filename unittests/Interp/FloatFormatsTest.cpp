//===- FloatFormatsTest.cpp - bf16/f16 rounding against APFloat ----------===//
//
// The evaluator's conversions must round exactly as IEEE round-to-nearest-
// even does; llvm::APFloat is an independent implementation to check them.
//
//===----------------------------------------------------------------------===//

#include "tile/Interp/FloatFormats.h"
#include "tile/Interp/Inputs.h"

#include "llvm/ADT/APFloat.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace tile::interp;

namespace {
uint16_t viaAPFloat(float value, const llvm::fltSemantics &semantics) {
  llvm::APFloat converted(value);
  bool losesInfo = false;
  converted.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return static_cast<uint16_t>(converted.bitcastToAPInt().getZExtValue());
}

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// Specials, boundaries and ties for both formats, plus random bit patterns.
std::vector<float> testValues() {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -1.0f,
                               65504.0f,
                               65519.99f,
                               65520.0f,
                               -65520.0f,
                               6.1035156e-05f,
                               5.9604645e-08f,
                               2.9802322e-08f,
                               2.9802326e-08f,
                               8.940697e-08f,
                               1.0e-10f,
                               3.3895314e38f,
                               std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::denorm_min(),
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity()};
  // Exact ties between neighbouring bf16 values (low 16 bits = 0x8000) and
  // f16 values (low 13 bits = 0x1000), with even and odd kept mantissas.
  for (uint32_t high : {0x3f80u, 0x3f81u, 0x4049u, 0xc2f7u, 0x7f7fu})
    values.push_back(floatFromBits((high << 16) | 0x8000u));
  for (uint32_t base : {0x3f800000u, 0x3f802000u, 0x38800000u, 0x477fe000u})
    values.push_back(floatFromBits(base | 0x1000u));
  Random random(42);
  for (int i = 0; i < 200000; ++i) {
    float value = floatFromBits(static_cast<uint32_t>(random.next()));
    if (!std::isnan(value))
      values.push_back(value);
  }
  // Many values in the f16 subnormal and normal range.
  for (int i = 0; i < 200000; ++i)
    values.push_back(static_cast<float>(random.uniform(-1e-4, 1e-4)));
  return values;
}
} // namespace

TEST(FloatFormats, BF16MatchesAPFloat) {
  for (float value : testValues())
    ASSERT_EQ(floatToBF16Bits(value),
              viaAPFloat(value, llvm::APFloat::BFloat()))
        << "value " << value;
}

TEST(FloatFormats, F16MatchesAPFloat) {
  for (float value : testValues())
    ASSERT_EQ(floatToF16Bits(value),
              viaAPFloat(value, llvm::APFloat::IEEEhalf()))
        << "value " << value;
}

TEST(FloatFormats, DecodeIsExactForEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    auto pattern = static_cast<uint16_t>(bits);
    llvm::APFloat half(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
    llvm::APFloat brain(llvm::APFloat::BFloat(), llvm::APInt(16, bits));
    bool losesInfo = false;
    half.convert(llvm::APFloat::IEEEsingle(),
                 llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    brain.convert(llvm::APFloat::IEEEsingle(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    float f16 = f16BitsToFloat(pattern), bf16 = bf16BitsToFloat(pattern);
    if (std::isnan(f16))
      EXPECT_TRUE(half.isNaN()) << bits;
    else
      ASSERT_EQ(f16, half.convertToFloat()) << bits;
    if (std::isnan(bf16))
      EXPECT_TRUE(brain.isNaN()) << bits;
    else
      ASSERT_EQ(bf16, brain.convertToFloat()) << bits;
  }
}

TEST(FloatFormats, NaNStaysNaN) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(bf16BitsToFloat(floatToBF16Bits(nan))));
  EXPECT_TRUE(std::isnan(f16BitsToFloat(floatToF16Bits(nan))));
  // A signalling NaN whose payload sits only in the low bits must not turn
  // into infinity when truncated to bf16.
  float signalling = floatFromBits(0x7f800001u);
  EXPECT_TRUE(std::isnan(bf16BitsToFloat(floatToBF16Bits(signalling))));
}

TEST(FloatFormats, RoundToGoesThroughF32) {
  // 1 + 2^-8 + 2^-30 lies just above a bf16 tie; rounding the double
  // straight to bf16 would round up, but the GPU first rounds to f32
  // (giving exactly the tie 1 + 2^-8) and then ties to even: 1.0.
  double value = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(roundTo(StorageType::BF16, value), 1.0);
  EXPECT_EQ(roundTo(StorageType::F32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(roundTo(StorageType::F64, 0.1), 0.1);
}
