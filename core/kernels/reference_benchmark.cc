// Copyright 2026 The zero3 Authors.
//
// Speed of the reference kernels at the sizes the simulator's data mode runs
// (small models, tens of tokens). Prints figures; asserts nothing.

#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/kernels/kernel_test_util.h"
#include "core/kernels/op_args.h"
#include "core/kernels/reference.h"

namespace zero3 {
namespace kernels {
namespace {

using ::zero3::kernels::testing::ConvertVector;
using ::zero3::kernels::testing::RandomVector;

// The three GEMMs of a 256 -> 256 linear layer over 64 tokens.
void BM_LinearGemm(benchmark::State& state) {
  const int64_t rows = 64, dim = 256;
  const MatmulArgs all[3] = {LinearForwardArgs(rows, dim, dim),
                             LinearBackwardInputArgs(rows, dim, dim),
                             LinearBackwardWeightArgs(rows, dim, dim)};
  const MatmulArgs& args = all[state.range(0)];
  const std::vector<float> a =
      ConvertVector<float>(RandomVector(rows * dim, 1));
  const std::vector<float> b = ConvertVector<float>(RandomVector(dim * dim, 2));
  std::vector<float> c(dim * dim);
  for (auto _ : state) {
    Matmul(args, a.data(), b.data(), c.data());
    benchmark::DoNotOptimize(c.data());
  }
  state.SetItemsProcessed(state.iterations() * 2 * args.m * args.n * args.k);
  state.SetLabel(state.range(0) == 0   ? "forward x*W^T"
                 : state.range(0) == 1 ? "backward dy*W"
                                       : "backward dy^T*x");
}
BENCHMARK(BM_LinearGemm)->DenseRange(0, 2);

void BM_Attention(benchmark::State& state) {
  AttentionArgs args;
  args.batch = 2;
  args.seq = 64;
  args.num_heads = 8;
  args.num_kv_heads = 2;
  args.head_dim = 32;
  const int64_t q_size = args.batch * args.seq * args.num_heads * args.head_dim;
  const int64_t kv_size =
      args.batch * args.seq * args.num_kv_heads * args.head_dim;
  const auto q = ConvertVector<float>(RandomVector(q_size, 3));
  const auto k = ConvertVector<float>(RandomVector(kv_size, 4));
  const auto v = ConvertVector<float>(RandomVector(kv_size, 5));
  std::vector<float> out(q_size), lse(args.batch * args.num_heads * args.seq);
  std::vector<float> dq(q_size), dk(kv_size), dv(kv_size);
  const bool backward = state.range(0) == 1;
  AttentionForward(args, q.data(), k.data(), v.data(), out.data(), lse.data());
  for (auto _ : state) {
    if (backward) {
      AttentionBackward(args, q.data(), k.data(), v.data(), out.data(),
                        lse.data(), out.data(), dq.data(), dk.data(),
                        dv.data());
      benchmark::DoNotOptimize(dq.data());
    } else {
      AttentionForward(args, q.data(), k.data(), v.data(), out.data(),
                       lse.data());
      benchmark::DoNotOptimize(out.data());
    }
  }
  state.SetLabel(backward ? "backward" : "forward");
}
BENCHMARK(BM_Attention)->Arg(0)->Arg(1);

void BM_AdamW(benchmark::State& state) {
  AdamWArgs args;
  args.n = state.range(0);
  args.weight_decay = 0.01f;
  std::vector<float> p(args.n, 1.0f), g(args.n, 0.5f), m(args.n), v(args.n);
  for (auto _ : state) {
    AdamWStep(args, p.data(), g.data(), m.data(), v.data());
    benchmark::DoNotOptimize(p.data());
    ++args.step;
  }
  state.SetItemsProcessed(state.iterations() * args.n);
}
BENCHMARK(BM_AdamW)->Arg(1 << 20);

}  // namespace
}  // namespace kernels
}  // namespace zero3

BENCHMARK_MAIN();
