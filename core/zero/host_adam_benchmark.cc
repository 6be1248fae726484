// Copyright 2026 The zero3 Authors.
//
// Host AdamW throughput against the memory bandwidth of the same machine.
//
// AdamW on fp32 shards reads the parameter, gradient and both moments and
// writes three of them back: 28 bytes per parameter, so it is memory-bound.
// For each thread count this prints parameters per second, the bytes per
// second that implies, and, as the ceiling, the bandwidth of a streaming
// kernel with the same read/write mix (4 arrays read, 3 written) on the same
// machine. The other columns are the engine's steps, counted at the same 28
// bytes: out of place (the speculative step's, into a second copy of the
// state); with bf16 gradients in and a bf16 working copy out (the default
// mixed-precision step: 24 bytes of state, 2 in, 2 out); the same in calls
// of 2^25 elements each, as the engine's host step hands it out
// (zero::ZeroOptions::host_step_piece); the mixed step out of place
// (the speculative step in bf16); and with bf16 master weights and moments
// (bf16_master_weights_and_grads, bf16_optimizer_states), in place and out
// of place, counted at their 16 bytes per parameter (6 of state read and
// written, 2 of gradient in, 2 of working copy out).
//
//   bazel run -c opt //core/zero:host_adam_benchmark [-- ELEMENTS]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/zero/host_adam.h"

namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

// p += g; m = m * a + g; v = v * b + g: the same traffic as AdamW,
// vectorized like it.
__attribute__((target_clones("avx512f", "avx2", "default"))) void StreamRange(
    float* __restrict p, const float* __restrict g, float* __restrict m,
    float* __restrict v, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const float x = g[i];
    p[i] += x;
    m[i] = m[i] * 0.9f + x;
    v[i] = v[i] * 0.99f + x;
  }
}

void Stream(int64_t n, float* p, const float* g, float* m, float* v,
            int threads) {
  auto body = [&](int64_t begin, int64_t end) {
    StreamRange(p, g, m, v, begin, end);
  };
  std::vector<std::thread> workers;
  const int64_t per = (n + threads - 1) / threads;
  for (int t = 1; t < threads; ++t) {
    workers.emplace_back(body, t * per, std::min(n, (t + 1) * per));
  }
  body(0, std::min(n, per));
  for (auto& w : workers) w.join();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : (int64_t{1} << 26);
  std::vector<float> p(n, 0.5f), g(n, 0.01f), m(n, 0.0f), v(n, 0.0f);
  std::vector<float> p2(n), m2(n), v2(n);
  std::vector<uint16_t> g16(n, 0x3c23), w16(n);  // 0.01 in bf16
  // bf16 master (0.5) and moments (0), and a second set.
  std::vector<uint16_t> p16(n, 0x3f00), m16(n, 0), v16(n, 0);
  std::vector<uint16_t> p16b(n), m16b(n), v16b(n);
  const int max_threads = std::max(1u, std::thread::hardware_concurrency());
  std::printf(
      "host AdamW over %lld fp32 parameters (%.2f GiB of state), %d "
      "hardware threads\n",
      static_cast<long long>(n), n * 16.0 / (1 << 30), max_threads);
  std::printf("%8s %14s %14s %18s %10s %18s %16s %15s %16s %17s %17s\n",
              "threads", "Gparam/s", "AdamW GB/s", "streaming GB/s", "fraction",
              "out of place GB/s", "bf16 in/out GB/s", "in pieces GB/s",
              "bf16 out GB/s", "bf16 states GB/s", "b16 st. out GB/s");
  std::vector<int> counts;
  for (int t = 1; t < max_threads; t *= 2) counts.push_back(t);
  counts.push_back(max_threads);
  for (int t : counts) {
    zero3::kernels::AdamWArgs args;
    args.n = n;
    args.weight_decay = 0.01f;
    double best_adam = 1e30, best_stream = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      args.step = rep + 1;
      auto t0 = std::chrono::steady_clock::now();
      args.grad_scale = 0.5f;
      zero3::zero::HostAdamWStep(args, p.data(), g.data(), m.data(), v.data(),
                                 t);
      best_adam = std::min(best_adam, Seconds(t0));
      t0 = std::chrono::steady_clock::now();
      Stream(n, p.data(), g.data(), m.data(), v.data(), t);
      best_stream = std::min(best_stream, Seconds(t0));
    }
    // Out of place (the speculative step): from these arrays into others.
    double best_out = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      args.step = rep + 1;
      zero3::zero::HostAdamWArrays x;
      x.params = p.data();
      x.grads = g.data();
      x.exp_avg = m.data();
      x.exp_avg_sq = v.data();
      x.params_out = p2.data();
      x.exp_avg_out = m2.data();
      x.exp_avg_sq_out = v2.data();
      auto t0 = std::chrono::steady_clock::now();
      zero3::zero::HostAdamWStep(args, x, t);
      best_out = std::min(best_out, Seconds(t0));
    }
    // bf16 gradients in, bf16 working copy out (the default mixed step), in
    // calls of `piece` elements; `out`: out of place (the speculative step).
    auto mixed = [&](int64_t piece, bool out) {
      double best = 1e30;
      for (int rep = 0; rep < 3; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        for (int64_t b = 0; b < n; b += piece) {
          zero3::zero::HostAdamWArrays x;
          x.params = p.data() + b;
          x.grads = g16.data() + b;
          x.grad_dtype = zero3::kernels::DType::kBF16;
          x.exp_avg = m.data() + b;
          x.exp_avg_sq = v.data() + b;
          x.working = w16.data() + b;
          x.working_dtype = zero3::kernels::DType::kBF16;
          if (out) {
            x.params_out = p2.data() + b;
            x.exp_avg_out = m2.data() + b;
            x.exp_avg_sq_out = v2.data() + b;
          }
          zero3::kernels::AdamWArgs a = args;
          a.step = rep + 1;
          a.n = std::min(piece, n - b);
          zero3::zero::HostAdamWStep(a, x, t);
        }
        best = std::min(best, Seconds(t0));
      }
      return best;
    };
    // bf16 master and moments: in place, or out of place into a second set.
    auto states = [&](bool out) {
      double best = 1e30;
      for (int rep = 0; rep < 3; ++rep) {
        zero3::zero::HostAdamWArrays x;
        x.params = p16.data();
        x.master_dtype = zero3::kernels::DType::kBF16;
        x.grads = g16.data();
        x.grad_dtype = zero3::kernels::DType::kBF16;
        x.exp_avg = m16.data();
        x.exp_avg_sq = v16.data();
        x.moments_dtype = zero3::kernels::DType::kBF16;
        x.working = w16.data();
        x.working_dtype = zero3::kernels::DType::kBF16;
        if (out) {
          x.params_out = p16b.data();
          x.exp_avg_out = m16b.data();
          x.exp_avg_sq_out = v16b.data();
        }
        zero3::kernels::AdamWArgs a = args;
        a.step = rep + 1;
        auto t0 = std::chrono::steady_clock::now();
        zero3::zero::HostAdamWStep(a, x, t);
        best = std::min(best, Seconds(t0));
      }
      return best;
    };
    const double best_states = states(false);
    const double best_states_out = states(true);
    const double best_mixed = mixed(n, false);
    const double best_pieces = mixed(int64_t{1} << 25, false);
    const double best_mixed_out = mixed(n, true);
    const double adam_gbps = 28.0 * n / best_adam / 1e9;
    const double stream_gbps = 28.0 * n / best_stream / 1e9;
    std::printf(
        "%8d %14.3f %14.1f %18.1f %9.0f%% %18.1f %16.1f %15.1f %16.1f %17.1f "
        "%17.1f\n",
        t, n / best_adam / 1e9, adam_gbps, stream_gbps,
        100.0 * adam_gbps / stream_gbps, 28.0 * n / best_out / 1e9,
        28.0 * n / best_mixed / 1e9, 28.0 * n / best_pieces / 1e9,
        28.0 * n / best_mixed_out / 1e9, 16.0 * n / best_states / 1e9,
        16.0 * n / best_states_out / 1e9);
  }
  return 0;
}
