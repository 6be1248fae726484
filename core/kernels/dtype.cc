// Copyright 2026 The zero3 Authors.

#include "core/kernels/dtype.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/util/check.h"

namespace zero3 {
namespace kernels {
namespace {

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float BitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Rounds `value >> shift` to nearest, ties to even. 0 < shift < 32.
uint32_t ShiftRightRoundNearestEven(uint32_t value, int shift) {
  const uint32_t result = value >> shift;
  const uint32_t remainder = value & ((uint32_t{1} << shift) - 1);
  const uint32_t half = uint32_t{1} << (shift - 1);
  if (remainder > half || (remainder == half && (result & 1) != 0)) {
    return result + 1;
  }
  return result;
}

}  // namespace

int64_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kBF16:
    case DType::kF16:
      return 2;
  }
  ZR_CHECK(false) << "unknown DType " << static_cast<int>(dtype);
  return 0;
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kBF16:
      return "bf16";
    case DType::kF16:
      return "f16";
  }
  ZR_CHECK(false) << "unknown DType " << static_cast<int>(dtype);
  return "";
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  if (name == "f32" || name == "fp32" || name == "float32" || name == "float") {
    return DType::kF32;
  }
  if (name == "bf16" || name == "bfloat16") return DType::kBF16;
  if (name == "f16" || name == "fp16" || name == "float16" || name == "half") {
    return DType::kF16;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype \"", name, "\" (expected f32, bf16 or f16)"));
}

uint16_t FloatToBF16(float value) {
  const uint32_t bits = FloatBits(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    // NaN: truncating could clear every payload bit and turn it into inf, so
    // keep the sign and the top payload bits and force the quiet bit.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  // bf16 shares float's exponent, so rounding the 32-bit pattern at bit 16
  // handles normals, denormals and overflow to inf (a carry into the
  // exponent) alike.
  return static_cast<uint16_t>(ShiftRightRoundNearestEven(bits, 16));
}

float BF16ToFloat(uint16_t bits) {
  return BitsToFloat(static_cast<uint32_t>(bits) << 16);
}

uint16_t FloatToF16(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) {
    if (magnitude == 0x7F800000u) return sign | 0x7C00u;  // inf
    // NaN: keep the top 10 payload bits and force the quiet bit so the
    // result cannot become inf.
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  }
  // 2^16 and above is beyond the midpoint between 65504 (the largest fp16)
  // and 65536 (the next power of two), so it rounds to inf. Values in
  // [65520, 65536) reach inf through the exponent carry below.
  if (magnitude >= 0x47800000u) return sign | 0x7C00u;
  if (magnitude < 0x38800000u) {
    // Below 2^-14, the smallest fp16 normal: the result is an fp16 subnormal
    // (a multiple of 2^-24) or zero. Half of 2^-24 (2^-25) and below rounds
    // to zero; at exactly 2^-25 the tie goes to the even neighbour, zero.
    if (magnitude <= 0x33000000u) return sign;
    const uint32_t exponent = magnitude >> 23;  // 102..112
    const uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    // value = mantissa * 2^(exponent - 150); in units of 2^-24 that is
    // mantissa >> (126 - exponent). A round-up to 0x400 yields the smallest
    // normal, which is the correct encoding.
    return static_cast<uint16_t>(
        sign |
        ShiftRightRoundNearestEven(mantissa, 126 - static_cast<int>(exponent)));
  }
  // Normal: rebias the exponent from 127 to 15 (subtract 112 << 10 after
  // aligning the mantissa) and round away the 13 extra mantissa bits; a carry
  // out of the mantissa correctly increments the exponent.
  const uint32_t rounded = ShiftRightRoundNearestEven(magnitude, 13);
  return static_cast<uint16_t>(sign | (rounded - (112u << 10)));
}

float F16ToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1F) {
    return BitsToFloat(sign | 0x7F800000u | (mantissa << 13));
  }
  if (exponent == 0) {
    if (mantissa == 0) return BitsToFloat(sign);
    // Subnormal: normalize. The value is mantissa * 2^-24; shift the leading
    // one up to bit 10 and lower the exponent once per shift.
    int32_t float_exponent = 127 - 14;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --float_exponent;
    }
    mantissa &= 0x3FFu;
    return BitsToFloat(sign | (static_cast<uint32_t>(float_exponent) << 23) |
                       (mantissa << 13));
  }
  return BitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

void FloatToBF16(absl::Span<const float> src, absl::Span<uint16_t> dst) {
  ZR_CHECK_EQ(src.size(), dst.size());
  for (size_t i = 0; i < src.size(); ++i) dst[i] = FloatToBF16(src[i]);
}

void BF16ToFloat(absl::Span<const uint16_t> src, absl::Span<float> dst) {
  ZR_CHECK_EQ(src.size(), dst.size());
  for (size_t i = 0; i < src.size(); ++i) dst[i] = BF16ToFloat(src[i]);
}

void FloatToF16(absl::Span<const float> src, absl::Span<uint16_t> dst) {
  ZR_CHECK_EQ(src.size(), dst.size());
  for (size_t i = 0; i < src.size(); ++i) dst[i] = FloatToF16(src[i]);
}

void F16ToFloat(absl::Span<const uint16_t> src, absl::Span<float> dst) {
  ZR_CHECK_EQ(src.size(), dst.size());
  for (size_t i = 0; i < src.size(); ++i) dst[i] = F16ToFloat(src[i]);
}

float LoadAsFloat(DType dtype, const void* data, int64_t index) {
  switch (dtype) {
    case DType::kF32:
      return static_cast<const float*>(data)[index];
    case DType::kBF16:
      return BF16ToFloat(static_cast<const uint16_t*>(data)[index]);
    case DType::kF16:
      return F16ToFloat(static_cast<const uint16_t*>(data)[index]);
  }
  ZR_CHECK(false) << "unknown DType " << static_cast<int>(dtype);
  return 0.0f;
}

void StoreFromFloat(DType dtype, float value, void* data, int64_t index) {
  switch (dtype) {
    case DType::kF32:
      static_cast<float*>(data)[index] = value;
      return;
    case DType::kBF16:
      static_cast<uint16_t*>(data)[index] = FloatToBF16(value);
      return;
    case DType::kF16:
      static_cast<uint16_t*>(data)[index] = FloatToF16(value);
      return;
  }
  ZR_CHECK(false) << "unknown DType " << static_cast<int>(dtype);
}

float RoundThrough(DType dtype, float value) {
  if (dtype == DType::kF32) return value;
  float out;
  StoreFromFloat(dtype, value, &out, 0);
  return LoadAsFloat(dtype, &out, 0);
}

}  // namespace kernels
}  // namespace zero3
