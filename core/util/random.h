// Copyright 2026 The zero3 Authors.
//
// random.h: counter-based random numbers.
//
// Values are pure functions of (seed, stream, index), so any rank can
// generate any slice of a parameter or any sample of a batch on its own, in
// any order, and get the same numbers as every other rank and as the
// unsharded reference. Thread-safe (no state).

#ifndef ZERO3_CORE_UTIL_RANDOM_H_
#define ZERO3_CORE_UTIL_RANDOM_H_

#include <cmath>
#include <cstdint>

namespace zero3 {

// SplitMix64's finalizer: a bijective, well-mixed 64-bit hash.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline uint64_t HashOf(uint64_t seed, uint64_t stream, uint64_t index) {
  return Mix64(Mix64(Mix64(seed) ^ stream) ^ index);
}

// Uniform in (0, 1).
inline double UniformOf(uint64_t seed, uint64_t stream, uint64_t index) {
  return (static_cast<double>(HashOf(seed, stream, index) >> 11) + 0.5) *
         (1.0 / 9007199254740992.0);
}

// Standard normal (Box-Muller on two counter-derived uniforms).
inline double NormalOf(uint64_t seed, uint64_t stream, uint64_t index) {
  const double u1 = UniformOf(seed, stream, 2 * index);
  const double u2 = UniformOf(seed, stream, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_RANDOM_H_
