// Copyright 2026 The zero3 Authors.
//
// kernel_test_util.h: helpers for testing kernels numerically: seeded random
// inputs, central finite differences and relative error.
//
// The gradient check pattern: pick random weights R of the output's shape and
// the scalar loss L = sum(out * R). Then dL/dout = R, so running the backward
// kernel with d_out = R yields the analytic dL/dinput, which must match the
// central difference (L(x + h) - L(x - h)) / 2h taken element by element in
// double.

#ifndef ZERO3_CORE_KERNELS_KERNEL_TEST_UTIL_H_
#define ZERO3_CORE_KERNELS_KERNEL_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "absl/types/span.h"

namespace zero3 {
namespace kernels {
namespace testing {

// n values uniform in [lo, hi), deterministic for a seed.
inline std::vector<double> RandomVector(int64_t n, uint32_t seed,
                                        double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(n);
  for (double& value : values) value = dist(rng);
  return values;
}

// Element-wise conversion, e.g. double inputs to float for the float kernel.
template <typename To, typename From>
std::vector<To> ConvertVector(const std::vector<From>& values) {
  return std::vector<To>(values.begin(), values.end());
}

// sum_i a[i] * b[i] in double.
template <typename T>
double WeightedSum(absl::Span<const T> values, absl::Span<const double> w) {
  double sum = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    sum += static_cast<double>(values[i]) * w[i];
  }
  return sum;
}

// Central-difference gradient of loss() with respect to each element of *x,
// which loss() reads. *x is restored afterwards.
inline std::vector<double> NumericGradient(const std::function<double()>& loss,
                                           std::vector<double>* x,
                                           double h = 1e-5) {
  std::vector<double> grad(x->size());
  for (size_t i = 0; i < x->size(); ++i) {
    const double saved = (*x)[i];
    (*x)[i] = saved + h;
    const double plus = loss();
    (*x)[i] = saved - h;
    const double minus = loss();
    (*x)[i] = saved;
    grad[i] = (plus - minus) / (2 * h);
  }
  return grad;
}

// max_i |actual[i] - expected[i]| / max_i |expected[i]|: the error relative
// to the scale of the expected values, so that elements near zero do not
// dominate. 0 when both are all zero; infinite on a size mismatch or a NaN
// where the other side has none (positions where both are NaN, or both the
// same infinity, are ignored).
template <typename A, typename E>
double MaxRelativeError(absl::Span<const A> actual,
                        absl::Span<const E> expected) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (actual.size() != expected.size()) return kInf;
  double max_diff = 0;
  double max_expected = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = static_cast<double>(actual[i]);
    const double e = static_cast<double>(expected[i]);
    if (std::isnan(a) != std::isnan(e)) return kInf;
    max_diff = std::max(max_diff, std::fabs(a - e));
    max_expected = std::max(max_expected, std::fabs(e));
  }
  if (max_diff == 0) return 0;
  return max_expected == 0 ? kInf : max_diff / max_expected;
}

template <typename A, typename E>
double MaxRelativeError(const std::vector<A>& actual,
                        const std::vector<E>& expected) {
  return MaxRelativeError(absl::MakeConstSpan(actual),
                          absl::MakeConstSpan(expected));
}

}  // namespace testing
}  // namespace kernels
}  // namespace zero3

#endif  // ZERO3_CORE_KERNELS_KERNEL_TEST_UTIL_H_
