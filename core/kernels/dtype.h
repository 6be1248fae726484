// Copyright 2026 The zero3 Authors.
//
// dtype.h: the element types the engine stores, and conversions between them.
//
// Device buffers hold fp32, bf16 or fp16 elements; all arithmetic in the
// reference kernels is done in float (or double), so low-precision storage is
// handled as raw uint16_t bit patterns converted on load and store. The
// conversions here are the single definition of that rounding for the whole
// project: the CUDA kernels' conversions are compared against them.
//
// Rounding is IEEE round-to-nearest-even. NaN stays NaN (sign kept, made
// quiet), infinities stay infinite, denormals are converted exactly or
// rounded like any other value, and a float beyond the fp16 range rounds to
// +-inf as IEEE requires (bf16 has float's exponent range, so only values
// within half a bf16 ulp of FLT_MAX or beyond round to inf).
//
// All functions are pure and thread-safe.

#ifndef ZERO3_CORE_KERNELS_DTYPE_H_
#define ZERO3_CORE_KERNELS_DTYPE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zero3 {
namespace kernels {

// Storage element type of a buffer.
enum class DType {
  kF32,   // IEEE binary32.
  kBF16,  // bfloat16: the top 16 bits of a binary32.
  kF16,   // IEEE binary16.
};

// Bytes per element: 4, 2, 2.
int64_t DTypeSize(DType dtype);

// Canonical short name: "f32", "bf16", "f16".
absl::string_view DTypeName(DType dtype);

// Parses a canonical name or a common alias ("fp32", "float32", "float",
// "fp16", "float16", "half", "bfloat16"); case-sensitive. InvalidArgument
// otherwise.
absl::StatusOr<DType> ParseDType(absl::string_view name);

// Scalar conversions. bf16 and fp16 values travel as their bit patterns.
uint16_t FloatToBF16(float value);
float BF16ToFloat(uint16_t bits);  // Exact.
uint16_t FloatToF16(float value);
float F16ToFloat(uint16_t bits);  // Exact.

// Bulk conversions, element by element as the scalar versions above. `src`
// and `dst` must have equal sizes and must not overlap.
void FloatToBF16(absl::Span<const float> src, absl::Span<uint16_t> dst);
void BF16ToFloat(absl::Span<const uint16_t> src, absl::Span<float> dst);
void FloatToF16(absl::Span<const float> src, absl::Span<uint16_t> dst);
void F16ToFloat(absl::Span<const uint16_t> src, absl::Span<float> dst);

// Reads element `index` of a buffer of `dtype` as float (exact).
float LoadAsFloat(DType dtype, const void* data, int64_t index);

// Writes `value` as element `index` of a buffer of `dtype`, rounding to
// nearest even.
void StoreFromFloat(DType dtype, float value, void* data, int64_t index);

// `value` rounded to `dtype` as StoreFromFloat does, read back as float:
// `value` itself for f32.
float RoundThrough(DType dtype, float value);

}  // namespace kernels
}  // namespace zero3

#endif  // ZERO3_CORE_KERNELS_DTYPE_H_
