// Copyright 2026 The zero3 Authors.

#include "core/zero/host_adam.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "core/util/check.h"

namespace zero3 {
namespace zero {
namespace {

// Everything the per-element update needs, computed once per step as
// DeepSpeed's cpu_adam does (beta^t in double, the corrections in float).
struct Constants {
  float scale, beta1, beta2, beta1_minus1, beta2_minus1, eps, weight_decay,
      step_size, w_decay, bias_correction2;
};

Constants Prepare(const kernels::AdamWArgs& a, float grad_scale) {
  Constants c;
  float bias_correction1 = 1.0f;
  c.bias_correction2 = 1.0f;
  if (a.bias_correction) {
    const float beta1_t =
        static_cast<float>(std::pow(static_cast<double>(a.beta1), a.step));
    const float beta2_t =
        static_cast<float>(std::pow(static_cast<double>(a.beta2), a.step));
    bias_correction1 = 1.0f - beta1_t;
    c.bias_correction2 = 1.0f / std::sqrt(1.0f - beta2_t);
  }
  c.scale = grad_scale;
  c.beta1 = a.beta1;
  c.beta2 = a.beta2;
  c.beta1_minus1 = 1 - a.beta1;
  c.beta2_minus1 = 1 - a.beta2;
  c.eps = a.eps;
  c.weight_decay = a.weight_decay;
  c.step_size = -1.0f * a.lr / bias_correction1;
  c.w_decay = -1.0f * a.lr * a.weight_decay;
  return c;
}

// The element update of core/kernels' AdamWStep applied to g * scale, in the
// same float operations in the same order (this file is built without FMA
// contraction), so results are bit-identical to the reference. One clone
// per vector width: the loop has no dependencies between elements, so the
// compiler vectorizes it, and the dispatcher picks the widest the CPU has.
template <bool kL2, bool kDecoupled>
__attribute__((target_clones("avx512f", "avx2", "default"))) void Loop(
    const Constants c, int64_t n, float* __restrict params,
    const float* __restrict grads, float* __restrict exp_avg,
    float* __restrict exp_avg_sq) {
  for (int64_t i = 0; i < n; ++i) {
    float grad = grads[i] * c.scale;
    float param = params[i];
    float momentum = exp_avg[i];
    float variance = exp_avg_sq[i];
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
    params[i] = param;
    exp_avg[i] = momentum;
    exp_avg_sq[i] = variance;
  }
}

void StepRange(const kernels::AdamWArgs& a, const Constants& c, float* p,
               const float* g, float* m, float* v, int64_t begin, int64_t end) {
  const int64_t n = end - begin;
  const bool decay = a.weight_decay > 0.0f;
  if (decay && a.adamw_mode) {
    Loop<false, true>(c, n, p + begin, g + begin, m + begin, v + begin);
  } else if (decay) {
    Loop<true, false>(c, n, p + begin, g + begin, m + begin, v + begin);
  } else {
    Loop<false, false>(c, n, p + begin, g + begin, m + begin, v + begin);
  }
}

}  // namespace

int OptimizerThreads(int requested) {
  if (requested > 0) return requested;
  return std::max(1u, std::thread::hardware_concurrency());
}

void HostAdamWStep(const kernels::AdamWArgs& args, float grad_scale,
                   float* params, const float* grads, float* exp_avg,
                   float* exp_avg_sq, int threads) {
  ZR_CHECK_GE(args.step, int64_t{1}) << "AdamW steps count from 1";
  const int64_t n = args.n;
  const Constants c = Prepare(args, grad_scale);
  // Below ~256K elements per thread, starting a thread costs more than it
  // saves.
  const int t = static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(threads, n / (1 << 18))));
  if (t == 1) {
    StepRange(args, c, params, grads, exp_avg, exp_avg_sq, 0, n);
    return;
  }
  // Chunks of whole cache lines, so threads never share one.
  const int64_t per = ((n + t - 1) / t + 15) / 16 * 16;
  std::vector<std::thread> workers;
  for (int i = 1; i < t; ++i) {
    const int64_t begin = i * per;
    const int64_t end = std::min(n, begin + per);
    if (begin >= end) break;
    workers.emplace_back(StepRange, std::cref(args), std::cref(c), params,
                         grads, exp_avg, exp_avg_sq, begin, end);
  }
  StepRange(args, c, params, grads, exp_avg, exp_avg_sq, 0, std::min(n, per));
  for (std::thread& w : workers) w.join();
}

}  // namespace zero
}  // namespace zero3
