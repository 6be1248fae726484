// Copyright 2026 The zero3 Authors.

#include "core/kernels/dtype.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace kernels {
namespace {

using ::zero3::testing::IsOkAndHolds;
using ::zero3::testing::StatusIs;

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

bool IsNanF16(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF); }
bool IsNanBF16(uint16_t h) { return (h & 0x7F80) == 0x7F80 && (h & 0x7F); }

// The value of an fp16 bit pattern, from the IEEE definition (independent of
// the bit manipulation under test).
double F16Value(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  if (exponent == 0x1F) {
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DTypeSize(DType::kF32), 4);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2);
  EXPECT_EQ(DTypeSize(DType::kF16), 2);
  EXPECT_EQ(DTypeName(DType::kF32), "f32");
  EXPECT_EQ(DTypeName(DType::kBF16), "bf16");
  EXPECT_EQ(DTypeName(DType::kF16), "f16");
}

TEST(DTypeTest, ParseNamesAndAliases) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    EXPECT_THAT(ParseDType(DTypeName(dtype)), IsOkAndHolds(dtype));
  }
  EXPECT_THAT(ParseDType("fp32"), IsOkAndHolds(DType::kF32));
  EXPECT_THAT(ParseDType("float32"), IsOkAndHolds(DType::kF32));
  EXPECT_THAT(ParseDType("bfloat16"), IsOkAndHolds(DType::kBF16));
  EXPECT_THAT(ParseDType("fp16"), IsOkAndHolds(DType::kF16));
  EXPECT_THAT(ParseDType("half"), IsOkAndHolds(DType::kF16));
  EXPECT_THAT(ParseDType("int8"), StatusIs(absl::StatusCode::kInvalidArgument,
                                           ::testing::HasSubstr("int8")));
}

TEST(BF16Test, AllBitPatternsRoundTripThroughFloat) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float f = BF16ToFloat(h);
    // bf16 is the top half of a float, exactly.
    ASSERT_EQ(Bits(f), i << 16);
    const uint16_t back = FloatToBF16(f);
    if (IsNanBF16(h)) {
      ASSERT_TRUE(std::isnan(f));
      ASSERT_TRUE(IsNanBF16(back)) << std::hex << i;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << "NaN keeps its sign";
      if (h & 0x40) {
        ASSERT_EQ(back, h) << "quiet NaN payload kept";
      }
    } else {
      ASSERT_EQ(back, h) << std::hex << i;
    }
  }
}

TEST(BF16Test, RoundsToNearestEvenAtEveryMidpoint) {
  // Between consecutive bf16 values a and a+1 (same sign, finite), the float
  // halfway point has low half 0x8000. It must round to whichever of the two
  // is even; one float ulp either side must round to the nearer one.
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    if ((h & 0x7F80) == 0x7F80) continue;  // inf/NaN have no successor.
    const uint32_t mid = (i << 16) | 0x8000u;
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : h;
    ASSERT_EQ(FloatToBF16(FromBits(mid)), even) << std::hex << i;
    ASSERT_EQ(FloatToBF16(FromBits(mid - 1)), h) << std::hex << i;
    ASSERT_EQ(FloatToBF16(FromBits(mid + 1)), static_cast<uint16_t>(h + 1))
        << std::hex << i;
  }
}

TEST(BF16Test, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatToBF16(inf), 0x7F80);
  EXPECT_EQ(FloatToBF16(-inf), 0xFF80);
  EXPECT_EQ(FloatToBF16(0.0f), 0x0000);
  EXPECT_EQ(FloatToBF16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBF16(1.0f), 0x3F80);
  // FLT_MAX is above the midpoint between the largest bf16 (0x7F7F) and the
  // next power of two, so it rounds to inf.
  EXPECT_EQ(FloatToBF16(std::numeric_limits<float>::max()), 0x7F80);
  // A NaN whose payload lives only in the low 16 bits must stay NaN.
  const uint16_t nan = FloatToBF16(FromBits(0x7F800001u));
  EXPECT_TRUE(IsNanBF16(nan));
  EXPECT_TRUE(IsNanBF16(FloatToBF16(FromBits(0xFF800001u))));
  EXPECT_EQ(FloatToBF16(FromBits(0xFF800001u)) & 0x8000, 0x8000);
  // Float denormals: the smallest rounds to zero (below half a bf16 ulp of
  // 2^-133), a bf16-representable one converts exactly.
  EXPECT_EQ(FloatToBF16(FromBits(0x00000001u)), 0x0000);
  EXPECT_EQ(FloatToBF16(FromBits(0x00010000u)), 0x0001);
  EXPECT_EQ(FloatToBF16(FromBits(0x00018000u)), 0x0002);  // tie to even
}

TEST(F16Test, AllBitPatternsRoundTripThroughFloat) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float f = F16ToFloat(h);
    const double expected = F16Value(h);
    if (IsNanF16(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0);
      const uint16_t back = FloatToF16(f);
      ASSERT_TRUE(IsNanF16(back)) << std::hex << i;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << "NaN keeps its sign";
      if (h & 0x200) {
        ASSERT_EQ(back, h) << "quiet NaN payload kept";
      }
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), expected) << std::hex << i;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << i;
    ASSERT_EQ(FloatToF16(f), h) << std::hex << i;
  }
}

TEST(F16Test, RoundsToNearestEvenAtEveryMidpoint) {
  // The midpoint between consecutive finite fp16 values is exactly a float
  // (fp16 has 11 significant bits, float 24). Check the tie and the floats
  // one ulp either side of it, for every finite pattern including
  // subnormals and the step from 65504 to the (virtual) 65536, which is inf.
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    if ((h & 0x7C00) == 0x7C00) continue;
    const uint16_t next = static_cast<uint16_t>(h + 1);  // 0x7BFF+1 = inf.
    const double lo = F16Value(h);
    const double hi =
        (h & 0x7FFF) == 0x7BFF ? std::copysign(65536.0, lo) : F16Value(next);
    const float mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2) << "exact midpoint";
    const uint16_t even = (h & 1) ? next : h;
    ASSERT_EQ(FloatToF16(mid), even) << std::hex << i;
    const float below = std::nextafter(mid, static_cast<float>(lo));
    const float above = std::nextafter(mid, static_cast<float>(hi));
    ASSERT_EQ(FloatToF16(below), h) << std::hex << i;
    ASSERT_EQ(FloatToF16(above), next) << std::hex << i;
  }
}

TEST(F16Test, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatToF16(inf), 0x7C00);
  EXPECT_EQ(FloatToF16(-inf), 0xFC00);
  EXPECT_EQ(FloatToF16(0.0f), 0x0000);
  EXPECT_EQ(FloatToF16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToF16(1.0f), 0x3C00);
  EXPECT_EQ(FloatToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToF16(65519.0f), 0x7BFF);
  EXPECT_EQ(FloatToF16(65520.0f), 0x7C00);  // the tie rounds to inf (even)
  EXPECT_EQ(FloatToF16(1e5f), 0x7C00);
  EXPECT_EQ(FloatToF16(-1e30f), 0xFC00);
  EXPECT_EQ(FloatToF16(std::numeric_limits<float>::max()), 0x7C00);
  // Subnormals: 2^-24 is the smallest; 2^-25 ties to zero; just above it
  // rounds up; float denormals vanish.
  EXPECT_EQ(FloatToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(FloatToF16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(FloatToF16(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(FloatToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(FloatToF16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: to even
  EXPECT_EQ(FloatToF16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(FloatToF16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_TRUE(IsNanF16(FloatToF16(std::nanf(""))));
  EXPECT_TRUE(IsNanF16(FloatToF16(FromBits(0x7F800001u))));  // low payload
}

#if defined(__FLT16_MAX__)
// The compiler's own float -> _Float16 conversion is an independent RNE
// implementation; compare on many random floats across the whole range.
TEST(F16Test, AgreesWithCompilerFloat16OnRandomFloats) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 2000000; ++i) {
    uint32_t b = bits(rng);
    // Concentrate half the samples in and around the fp16 exponent range.
    if (i % 2) b = (b & 0x807FFFFFu) | ((100u + (b >> 23) % 45) << 23);
    const float f = FromBits(b);
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &h, sizeof(expected));
    ASSERT_EQ(FloatToF16(f), expected) << std::hex << b;
  }
}
#endif

TEST(BulkConversionTest, MatchesScalar) {
  const std::vector<float> src = {0.0f, -1.5f, 3.14159f, 1e-7f, 7e4f, -2e38f};
  std::vector<uint16_t> bf16(src.size());
  std::vector<uint16_t> f16(src.size());
  FloatToBF16(src, absl::MakeSpan(bf16));
  FloatToF16(src, absl::MakeSpan(f16));
  std::vector<float> from_bf16(src.size());
  std::vector<float> from_f16(src.size());
  BF16ToFloat(bf16, absl::MakeSpan(from_bf16));
  F16ToFloat(f16, absl::MakeSpan(from_f16));
  for (size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(bf16[i], FloatToBF16(src[i]));
    EXPECT_EQ(f16[i], FloatToF16(src[i]));
    EXPECT_EQ(Bits(from_bf16[i]), Bits(BF16ToFloat(bf16[i])));
    EXPECT_EQ(Bits(from_f16[i]), Bits(F16ToFloat(f16[i])));
  }
}

TEST(BulkConversionDeathTest, SizeMismatchIsABug) {
  std::vector<float> src(3);
  std::vector<uint16_t> dst(2);
  EXPECT_DEATH_IF_SUPPORTED(FloatToBF16(src, absl::MakeSpan(dst)),
                            "CHECK failed");
}

TEST(LoadStoreTest, RoundTripsEachDType) {
  float f32[2] = {};
  uint16_t u16[2] = {};
  StoreFromFloat(DType::kF32, 1.1f, f32, 1);
  EXPECT_EQ(LoadAsFloat(DType::kF32, f32, 1), 1.1f);
  StoreFromFloat(DType::kBF16, 1.1f, u16, 1);
  EXPECT_EQ(u16[1], FloatToBF16(1.1f));
  EXPECT_EQ(LoadAsFloat(DType::kBF16, u16, 1), BF16ToFloat(u16[1]));
  StoreFromFloat(DType::kF16, 1.1f, u16, 0);
  EXPECT_EQ(u16[0], FloatToF16(1.1f));
  EXPECT_EQ(LoadAsFloat(DType::kF16, u16, 0), F16ToFloat(u16[0]));
}

}  // namespace
}  // namespace kernels
}  // namespace zero3
