// Copyright 2026 The zero3 Authors.

#include "core/zero/host_adam.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/util/check.h"
#include "core/util/parallel_for.h"

namespace zero3 {
namespace zero {
namespace {

using kernels::DType;

// Everything the per-element update needs, computed once per step as
// DeepSpeed's cpu_adam does (beta^t in double, the corrections in float).
struct Constants {
  float scale, beta1, beta2, beta1_minus1, beta2_minus1, eps, weight_decay,
      step_size, w_decay, bias_correction2;
};

Constants Prepare(const kernels::AdamWArgs& a) {
  Constants c;
  const kernels::AdamWStepScalars step = kernels::AdamWStepScalarsOf(a);
  c.bias_correction2 = step.bias_correction2;
  c.scale = a.grad_scale;
  c.beta1 = a.beta1;
  c.beta2 = a.beta2;
  c.beta1_minus1 = 1 - a.beta1;
  c.beta2_minus1 = 1 - a.beta2;
  c.eps = a.eps;
  c.weight_decay = a.weight_decay;
  c.step_size = step.step_size;
  c.w_decay = step.w_decay;
  return c;
}

// The element update of core/kernels' AdamWStep applied to g * scale, in the
// same float operations in the same order (this file is built without FMA
// contraction), so results are bit-identical to the reference.
template <bool kL2, bool kDecoupled>
__attribute__((always_inline)) inline void Element(const Constants& c,
                                                   float grad, float& param,
                                                   float& momentum,
                                                   float& variance) {
  grad = grad * c.scale;
  if (kL2) grad = param * c.weight_decay + grad;
  momentum = momentum * c.beta1;
  momentum = grad * c.beta1_minus1 + momentum;
  variance = variance * c.beta2;
  grad = grad * grad;
  variance = grad * c.beta2_minus1 + variance;
  float denom = std::sqrt(variance);
  denom = denom * c.bias_correction2 + c.eps;
  const float update = momentum / denom;
  if (kDecoupled) param += c.w_decay * param;
  param = update * c.step_size + param;
}

// In place. One clone per vector width: the loop has no dependencies
// between elements, so the compiler vectorizes it, and the dispatcher picks
// the widest the CPU has.
template <bool kL2, bool kDecoupled>
__attribute__((target_clones("avx512f", "avx2", "default"))) void Loop(
    const Constants c, int64_t n, float* __restrict params,
    const float* __restrict grads, float* __restrict exp_avg,
    float* __restrict exp_avg_sq) {
  for (int64_t i = 0; i < n; ++i) {
    float param = params[i], momentum = exp_avg[i], variance = exp_avg_sq[i];
    Element<kL2, kDecoupled>(c, grads[i], param, momentum, variance);
    params[i] = param;
    exp_avg[i] = momentum;
    exp_avg_sq[i] = variance;
  }
}

// Out of place: the same element update from the inputs into the outputs.
template <bool kL2, bool kDecoupled>
__attribute__((target_clones("avx512f", "avx2", "default"))) void LoopOut(
    const Constants c, int64_t n, const float* __restrict params,
    const float* __restrict grads, const float* __restrict exp_avg,
    const float* __restrict exp_avg_sq, float* __restrict params_out,
    float* __restrict exp_avg_out, float* __restrict exp_avg_sq_out) {
  for (int64_t i = 0; i < n; ++i) {
    float param = params[i], momentum = exp_avg[i], variance = exp_avg_sq[i];
    Element<kL2, kDecoupled>(c, grads[i], param, momentum, variance);
    params_out[i] = param;
    exp_avg_out[i] = momentum;
    exp_avg_sq_out[i] = variance;
  }
}

// kernels::FloatToBF16 without branches, so it vectorizes: round to nearest
// even at bit 16 by adding 0x7FFF plus the kept lowest bit (a carry into the
// exponent gives inf, as it should); a NaN keeps its sign and top payload
// bits and gets the quiet bit, so it cannot become inf.
__attribute__((always_inline)) inline uint16_t ToBF16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t nan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? nan
                                                                  : rounded);
}

// bf16 is the top half of a float: widening is exact and a shift.
__attribute__((always_inline)) inline float FromBF16(uint16_t x) {
  const uint32_t bits = static_cast<uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// In place with bf16 gradients in and a bf16 working copy out (the default
// mixed-precision step), widening and rounding in registers; the working
// copy goes to `working` (L1 scratch, streamed out by the caller).
template <bool kL2, bool kDecoupled>
__attribute__((target_clones("avx512f", "avx2", "default"))) void LoopBF16(
    const Constants c, int64_t n, float* __restrict params,
    const uint16_t* __restrict grads, float* __restrict exp_avg,
    float* __restrict exp_avg_sq, uint16_t* __restrict working) {
  for (int64_t i = 0; i < n; ++i) {
    float param = params[i], momentum = exp_avg[i], variance = exp_avg_sq[i];
    Element<kL2, kDecoupled>(c, FromBF16(grads[i]), param, momentum, variance);
    params[i] = param;
    exp_avg[i] = momentum;
    exp_avg_sq[i] = variance;
    working[i] = ToBF16(param);
  }
}

// LoopBF16 out of place: the updated master and moments to the outputs.
template <bool kL2, bool kDecoupled>
__attribute__((target_clones("avx512f", "avx2", "default"))) void LoopOutBF16(
    const Constants c, int64_t n, const float* __restrict params,
    const uint16_t* __restrict grads, const float* __restrict exp_avg,
    const float* __restrict exp_avg_sq, float* __restrict params_out,
    float* __restrict exp_avg_out, float* __restrict exp_avg_sq_out,
    uint16_t* __restrict working) {
  for (int64_t i = 0; i < n; ++i) {
    float param = params[i], momentum = exp_avg[i], variance = exp_avg_sq[i];
    Element<kL2, kDecoupled>(c, FromBF16(grads[i]), param, momentum, variance);
    params_out[i] = param;
    exp_avg_out[i] = momentum;
    exp_avg_sq_out[i] = variance;
    working[i] = ToBF16(param);
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void WidenBF16(
    int64_t n, const uint16_t* __restrict src, float* __restrict dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = FromBF16(src[i]);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void NarrowBF16(
    int64_t n, const float* __restrict src, uint16_t* __restrict dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = ToBF16(src[i]);
}

void Widen(DType dtype, int64_t n, const void* src, float* dst) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::kBF16:
      WidenBF16(n, static_cast<const uint16_t*>(src), dst);
      return;
    case DType::kF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = kernels::F16ToFloat(s[i]);
      return;
    }
  }
}

void Narrow(DType dtype, int64_t n, const float* src, void* dst) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::kBF16:
      NarrowBF16(n, src, static_cast<uint16_t*>(dst));
      return;
    case DType::kF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = kernels::FloatToF16(src[i]);
      return;
    }
  }
}

// Low-precision gradients are widened, and the working copy written, a
// block at a time while the block is still in L1.
constexpr int64_t kBlock = 2048;

// dst[0, n) = src[0, n) with streaming (non-temporal) stores where the CPU
// has them: the out-of-place step's outputs are not read again in this
// step, and plain stores would first read every output line from memory,
// which halves the step's speed (measured).
void StreamOut(float* dst, const float* src, int64_t n) {
#if defined(__SSE2__)
  int64_t i = 0;
  auto scalar = [&](int64_t k) {
    int bits;
    std::memcpy(&bits, &src[k], 4);
    _mm_stream_si32(reinterpret_cast<int*>(dst + k), bits);
  };
  for (; i < n && reinterpret_cast<uintptr_t>(dst + i) % 16 != 0; ++i) {
    scalar(i);
  }
  for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
  for (; i < n; ++i) scalar(i);
#else
  std::memcpy(dst, src, n * 4);
#endif
}

// dst[0, n) = src[0, n) with streaming stores where the CPU has them.
void StreamOut16(uint16_t* dst, const uint16_t* src, int64_t n) {
#if defined(__SSE2__)
  int64_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(dst + i) % 16 != 0; ++i) {
    dst[i] = src[i];
  }
  for (; i + 8 <= n; i += 8) {
    _mm_stream_si128(
        reinterpret_cast<__m128i*>(dst + i),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
  for (; i < n; ++i) dst[i] = src[i];
#else
  std::memcpy(dst, src, n * 2);
#endif
}

// Calls f(std::bool_constant<kL2>, std::bool_constant<kDecoupled>) for
// `a`'s weight decay: decoupled (AdamW), L2 (Adam), or none; the loops are
// instantiated for each.
template <typename F>
void WithDecayMode(const kernels::AdamWArgs& a, F&& f) {
  const kernels::AdamWStepScalars step = kernels::AdamWStepScalarsOf(a);
  if (step.decoupled) {
    f(std::false_type{}, std::true_type{});
  } else if (step.l2) {
    f(std::true_type{}, std::false_type{});
  } else {
    f(std::false_type{}, std::false_type{});
  }
}

// A bf16 master (and moments): each value widened as it is loaded and the
// result rounded to nearest even as it is stored, in the step's one loop.
// (Widening whole blocks into fp32 scratch for Loop and narrowing them back
// ran at about three quarters of this speed: host_adam_benchmark.)
__attribute__((always_inline)) inline float Load(const float* p) { return *p; }
__attribute__((always_inline)) inline float Load(const uint16_t* p) {
  return FromBF16(*p);
}
__attribute__((always_inline)) inline void Store(float* p, float v) { *p = v; }
__attribute__((always_inline)) inline void Store(uint16_t* p, float v) {
  *p = ToBF16(v);
}

// In place: each array read and written at the same index, so the arrays
// are distinct from one another (__restrict) and the loop vectorizes.
template <typename M, bool kL2, bool kDecoupled>
__attribute__((target_clones("avx512f", "avx2", "default"))) void
LoopStateInPlace(const Constants c, int64_t n, uint16_t* __restrict params,
                 const float* __restrict grads, M* __restrict exp_avg,
                 M* __restrict exp_avg_sq) {
  for (int64_t i = 0; i < n; ++i) {
    float param = Load(params + i), momentum = Load(exp_avg + i),
          variance = Load(exp_avg_sq + i);
    Element<kL2, kDecoupled>(c, grads[i], param, momentum, variance);
    Store(params + i, param);
    Store(exp_avg + i, momentum);
    Store(exp_avg_sq + i, variance);
  }
}

// Out of place (the speculative step): from the inputs into the outputs.
template <typename M, bool kL2, bool kDecoupled>
__attribute__((target_clones("avx512f", "avx2", "default"))) void LoopStateOut(
    const Constants c, int64_t n, const uint16_t* __restrict params,
    const float* __restrict grads, const M* __restrict exp_avg,
    const M* __restrict exp_avg_sq, uint16_t* __restrict params_out,
    M* __restrict exp_avg_out, M* __restrict exp_avg_sq_out) {
  for (int64_t i = 0; i < n; ++i) {
    float param = Load(params + i), momentum = Load(exp_avg + i),
          variance = Load(exp_avg_sq + i);
    Element<kL2, kDecoupled>(c, grads[i], param, momentum, variance);
    Store(params_out + i, param);
    Store(exp_avg_out + i, momentum);
    Store(exp_avg_sq_out + i, variance);
  }
}

#if defined(__x86_64__)
// The bf16-state loop by hand at 16 lanes where the CPU has AVX-512 (the
// compiler's version of the loops above stays at 8): the same operations
// in the same order as Element (separate multiplies and adds, IEEE sqrt and
// divide), the same widening, and ToBF16's rounding, so the same bits.
__attribute__((target("avx512f"))) inline __m512 Widen16(const uint16_t* p) {
  const __m512i w = _mm512_cvtepu16_epi32(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
__attribute__((target("avx512f"))) inline __m512 Widen16(const float* p) {
  return _mm512_loadu_ps(p);
}
__attribute__((target("avx512f"))) inline void Narrow16(__m512 x, uint16_t* p) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)),
                       _mm512_and_si512(_mm512_srli_epi32(bits, 16), one)),
      16);
  const __m512i nan =
      _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(
      _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF)),
      _mm512_set1_epi32(0x7F800000));
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(p),
      _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, nan)));
}
__attribute__((target("avx512f"))) inline void Narrow16(__m512 x, float* p) {
  _mm512_storeu_ps(p, x);
}

// Loops n elements (in place where the outputs are the inputs), 16 at a
// time; returns how many it did (a multiple of 16).
template <typename M, bool kL2, bool kDecoupled>
__attribute__((target("avx512f"))) int64_t LoopStateAvx512(
    const Constants c, int64_t n, const uint16_t* params, const float* grads,
    const M* exp_avg, const M* exp_avg_sq, uint16_t* params_out, M* exp_avg_out,
    M* exp_avg_sq_out) {
  const __m512 scale = _mm512_set1_ps(c.scale);
  const __m512 wd = _mm512_set1_ps(c.weight_decay);
  const __m512 b1 = _mm512_set1_ps(c.beta1);
  const __m512 b1m = _mm512_set1_ps(c.beta1_minus1);
  const __m512 b2 = _mm512_set1_ps(c.beta2);
  const __m512 b2m = _mm512_set1_ps(c.beta2_minus1);
  const __m512 bc2 = _mm512_set1_ps(c.bias_correction2);
  const __m512 eps = _mm512_set1_ps(c.eps);
  const __m512 w_decay = _mm512_set1_ps(c.w_decay);
  const __m512 step_size = _mm512_set1_ps(c.step_size);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 param = Widen16(params + i);
    __m512 momentum = Widen16(exp_avg + i);
    __m512 variance = Widen16(exp_avg_sq + i);
    __m512 grad = _mm512_mul_ps(_mm512_loadu_ps(grads + i), scale);
    if (kL2) grad = _mm512_add_ps(_mm512_mul_ps(param, wd), grad);
    momentum = _mm512_mul_ps(momentum, b1);
    momentum = _mm512_add_ps(_mm512_mul_ps(grad, b1m), momentum);
    variance = _mm512_mul_ps(variance, b2);
    grad = _mm512_mul_ps(grad, grad);
    variance = _mm512_add_ps(_mm512_mul_ps(grad, b2m), variance);
    __m512 denom = _mm512_sqrt_ps(variance);
    denom = _mm512_add_ps(_mm512_mul_ps(denom, bc2), eps);
    const __m512 update = _mm512_div_ps(momentum, denom);
    if (kDecoupled) param = _mm512_add_ps(param, _mm512_mul_ps(w_decay, param));
    param = _mm512_add_ps(_mm512_mul_ps(update, step_size), param);
    Narrow16(param, params_out + i);
    Narrow16(momentum, exp_avg_out + i);
    Narrow16(variance, exp_avg_sq_out + i);
  }
  return i;
}
#endif

template <typename M>
void StepRangeState(const kernels::AdamWArgs& a, const Constants& c,
                    const HostAdamWArrays& x, int64_t begin, int64_t end) {
  const int64_t gsize = kernels::DTypeSize(x.grad_dtype);
  const bool out_of_place = x.params_out != nullptr;
  uint16_t* p = static_cast<uint16_t*>(x.params);
  M* m = static_cast<M*>(x.exp_avg);
  M* v = static_cast<M*>(x.exp_avg_sq);
  uint16_t* po = static_cast<uint16_t*>(x.params_out);
  M* mo = static_cast<M*>(x.exp_avg_out);
  M* vo = static_cast<M*>(x.exp_avg_sq_out);
  alignas(64) float widened[kBlock];
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f");
#endif
  for (int64_t b = begin; b < end; b += kBlock) {
    const int64_t n = std::min(end, b + kBlock) - b;
    const float* g;
    if (x.grad_dtype == DType::kF32) {
      g = static_cast<const float*>(x.grads) + b;
    } else {
      Widen(x.grad_dtype, n, static_cast<const char*>(x.grads) + b * gsize,
            widened);
      g = widened;
    }
    WithDecayMode(a, [&](auto l2, auto decoupled) {
      constexpr bool kL2 = decltype(l2)::value;
      constexpr bool kDecoupled = decltype(decoupled)::value;
      int64_t k = 0;  // done by the AVX-512 loop
#if defined(__x86_64__)
      if (avx512) {
        k = out_of_place
                ? LoopStateAvx512<M, kL2, kDecoupled>(
                      c, n, p + b, g, m + b, v + b, po + b, mo + b, vo + b)
                : LoopStateAvx512<M, kL2, kDecoupled>(
                      c, n, p + b, g, m + b, v + b, p + b, m + b, v + b);
      }
#endif
      if (out_of_place) {
        LoopStateOut<M, kL2, kDecoupled>(c, n - k, p + b + k, g + k, m + b + k,
                                         v + b + k, po + b + k, mo + b + k,
                                         vo + b + k);
      } else {
        LoopStateInPlace<M, kL2, kDecoupled>(c, n - k, p + b + k, g + k,
                                             m + b + k, v + b + k);
      }
    });
    // The working copy is the new bf16 master, bit for bit.
    if (x.working) {
      StreamOut16(static_cast<uint16_t*>(x.working) + b,
                  (out_of_place ? po : p) + b, n);
    }
  }
#if defined(__SSE2__)
  if (x.working) _mm_sfence();
#endif
}

// The default mixed-precision step over [begin, end): LoopBF16 (in place)
// or LoopOutBF16 (out of place, the speculative step) a block at a time into
// L1 scratch, each block's outputs then streamed out: the working copy is
// read by the DMA, not the CPU, and the out-of-place outputs not in this
// step, so plain stores would only add a read of every line. Widening into
// scratch, updating, then narrowing with plain stores ran at 0.84x the fp32
// step's rate on the same 28 bytes per parameter (16 threads, H200 host:
// 113 against 134 GB/s); in place this runs at 0.95x (127 GB/s).
// host_adam_benchmark.
void StepRangeBF16(const kernels::AdamWArgs& a, const Constants& c,
                   const HostAdamWArrays& x, int64_t begin, int64_t end) {
  const int64_t n = end - begin;
  float* p = static_cast<float*>(x.params) + begin;
  const uint16_t* g = static_cast<const uint16_t*>(x.grads) + begin;
  float* m = static_cast<float*>(x.exp_avg) + begin;
  float* v = static_cast<float*>(x.exp_avg_sq) + begin;
  uint16_t* w = static_cast<uint16_t*>(x.working) + begin;
  const bool in_place = x.params_out == nullptr;
  alignas(64) uint16_t scratch[kBlock];
  alignas(64) float out[3][kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t k = std::min(n - b, kBlock);
    WithDecayMode(a, [&](auto l2, auto decoupled) {
      constexpr bool kL2 = decltype(l2)::value;
      constexpr bool kDecoupled = decltype(decoupled)::value;
      if (in_place) {
        LoopBF16<kL2, kDecoupled>(c, k, p + b, g + b, m + b, v + b, scratch);
      } else {
        LoopOutBF16<kL2, kDecoupled>(c, k, p + b, g + b, m + b, v + b, out[0],
                                     out[1], out[2], scratch);
      }
    });
    if (!in_place) {
      StreamOut(static_cast<float*>(x.params_out) + begin + b, out[0], k);
      StreamOut(static_cast<float*>(x.exp_avg_out) + begin + b, out[1], k);
      StreamOut(static_cast<float*>(x.exp_avg_sq_out) + begin + b, out[2], k);
    }
    StreamOut16(w + b, scratch, k);
  }
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

void StepRange(const kernels::AdamWArgs& a, const Constants& c,
               const HostAdamWArrays& x, int64_t begin, int64_t end) {
  if (x.master_dtype == DType::kBF16) {
    if (x.moments_dtype == DType::kBF16) {
      StepRangeState<uint16_t>(a, c, x, begin, end);
    } else {
      StepRangeState<float>(a, c, x, begin, end);
    }
    return;
  }
  if (x.grad_dtype == DType::kBF16 && x.working &&
      x.working_dtype == DType::kBF16) {
    StepRangeBF16(a, c, x, begin, end);
    return;
  }
  const int64_t gsize = kernels::DTypeSize(x.grad_dtype);
  const int64_t wsize = kernels::DTypeSize(x.working_dtype);
  alignas(64) float widened[kBlock];
  const bool direct = x.grad_dtype == DType::kF32;
  // Out of place, each block is updated into L1 scratch, then streamed to
  // the outputs.
  const bool out_of_place = x.params_out != nullptr;
  alignas(64) float scratch[3][kBlock];
  // With nothing to convert, one pass over the whole range.
  const int64_t block =
      direct && !x.working && !out_of_place ? end - begin : kBlock;
  for (int64_t b = begin; b < end; b += block) {
    const int64_t n = std::min(end, b + block) - b;
    const float* g;
    if (direct) {
      g = static_cast<const float*>(x.grads) + b;
    } else {
      Widen(x.grad_dtype, n, static_cast<const char*>(x.grads) + b * gsize,
            widened);
      g = widened;
    }
    float* p = static_cast<float*>(x.params) + b;
    float* m = static_cast<float*>(x.exp_avg) + b;
    float* v = static_cast<float*>(x.exp_avg_sq) + b;
    if (out_of_place) {
      float* po = scratch[0];
      float* mo = scratch[1];
      float* vo = scratch[2];
      WithDecayMode(a, [&](auto l2, auto decoupled) {
        LoopOut<decltype(l2)::value, decltype(decoupled)::value>(c, n, p, g, m,
                                                                 v, po, mo, vo);
      });
      StreamOut(static_cast<float*>(x.params_out) + b, po, n);
      StreamOut(static_cast<float*>(x.exp_avg_out) + b, mo, n);
      StreamOut(static_cast<float*>(x.exp_avg_sq_out) + b, vo, n);
      p = po;  // the working copy is made from the updated values
    } else {
      WithDecayMode(a, [&](auto l2, auto decoupled) {
        Loop<decltype(l2)::value, decltype(decoupled)::value>(c, n, p, g, m, v);
      });
    }
    if (x.working) {
      Narrow(x.working_dtype, n, p, static_cast<char*>(x.working) + b * wsize);
    }
  }
#if defined(__SSE2__)
  // Streaming stores are weakly ordered: make them visible before the
  // task ends.
  if (out_of_place) _mm_sfence();
#endif
}

}  // namespace

int OptimizerThreads(int requested) {
  return requested > 0 ? requested : ProcessCores();
}

void HostAdamWStep(const kernels::AdamWArgs& args,
                   const HostAdamWArrays& arrays, int threads) {
  ZR_CHECK_GE(args.step, int64_t{1}) << "AdamW steps count from 1";
  ZR_CHECK(arrays.params && arrays.grads && arrays.exp_avg && arrays.exp_avg_sq)
      << "HostAdamWStep needs params, grads and both moments";
  ZR_CHECK((arrays.params_out == nullptr) == (arrays.exp_avg_out == nullptr) &&
           (arrays.params_out == nullptr) == (arrays.exp_avg_sq_out == nullptr))
      << "HostAdamWStep out of place needs all three outputs";
  ZR_CHECK(arrays.master_dtype == DType::kF32 ||
           arrays.master_dtype == DType::kBF16)
      << "HostAdamWStep keeps an fp32 or bf16 master";
  ZR_CHECK(arrays.moments_dtype == DType::kF32 ||
           (arrays.moments_dtype == DType::kBF16 &&
            arrays.master_dtype == DType::kBF16))
      << "HostAdamWStep keeps bf16 moments only with a bf16 master";
  ZR_CHECK(arrays.master_dtype == DType::kF32 || arrays.working == nullptr ||
           arrays.working_dtype == DType::kBF16)
      << "HostAdamWStep's working copy of a bf16 master is bf16";
  const Constants c = Prepare(args);
  ParallelFor(args.n, threads, [&](int64_t begin, int64_t end) {
    StepRange(args, c, arrays, begin, end);
  });
}

void HostAdamWStep(const kernels::AdamWArgs& args, float* params,
                   const float* grads, float* exp_avg, float* exp_avg_sq,
                   int threads) {
  HostAdamWArrays a;
  a.params = params;
  a.grads = grads;
  a.exp_avg = exp_avg;
  a.exp_avg_sq = exp_avg_sq;
  HostAdamWStep(args, a, threads);
}

void HostWidenToFloat(const void* src, DType src_dtype, float* dst, int64_t n,
                      int threads) {
  const int64_t size = kernels::DTypeSize(src_dtype);
  ParallelFor(n, threads, [&](int64_t begin, int64_t end) {
    Widen(src_dtype, end - begin, static_cast<const char*>(src) + begin * size,
          dst + begin);
  });
}

void HostCastFromFloat(const float* src, DType dst_dtype, void* dst, int64_t n,
                       int threads) {
  const int64_t size = kernels::DTypeSize(dst_dtype);
  ParallelFor(n, threads, [&](int64_t begin, int64_t end) {
    Narrow(dst_dtype, end - begin, src + begin,
           static_cast<char*>(dst) + begin * size);
  });
}

}  // namespace zero
}  // namespace zero3
