// Copyright 2026 The zero3 Authors.
//
// Times every kernel at the shapes of one Qwen2.5-1.5B micro-batch (hidden
// 1536, 12 query heads and 2 kv heads of 128, ffn 8960, vocab 151936, 4 x
// 2048 tokens, bf16) and prints, per op, the time per call and the achieved
// TFLOP/s (matrix and attention ops) or GB/s (everything else, counting each
// byte read or written once), against the device's copy bandwidth measured
// first. Asserts nothing about speed.
//
//   bazel build -c opt //backends/cuda/kernels:kernels_benchmark
//   bazel-bin/backends/cuda/kernels/kernels_benchmark [--iters=N] [FILTER]
//
// FILTER keeps the ops whose name contains it. Times are CUDA-event times of
// N back-to-back launches on one stream after warm-up calls, divided by N.
// Inputs are random bf16 values in [-1, 1) (the timing of these kernels does
// not depend on the values). Attention runs on both kernel families (the
// tensor-core one is what the model uses); attention FLOPs count the causal
// half only, with the backward pass at 2.5x the forward (the usual
// convention; the kernels do more, as dQ and dK/dV recompute the scores).
//
// The "phi3" group asks whether Phi-3's fused projections are faster kept
// fused on the device: at Phi-3-mini's shapes (hidden 3072, q = k = v =
// 3072, ffn 8192, the same tokens) it times each GEMM of q, k and v (gate
// and up) as zero3 runs them, split, and the one GEMM of qkv_proj
// (gate_up_proj) fused, forward and both backward GEMMs, and prints the
// split sum beside the fused time.

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/cuda/kernels/launch.h"
#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"
#include "core/runtime/kernel_call.h"

namespace zero3 {
namespace cuda {
namespace {

using kernels::DType;
namespace ops = runtime::ops;
namespace k = kernels;

constexpr int64_t kBatch = 4, kSeq = 2048, kTokens = kBatch * kSeq;
constexpr int64_t kHidden = 1536, kHeads = 12, kKvHeads = 2, kHeadDim = 128;
constexpr int64_t kFfn = 8960, kVocab = 151936;
constexpr int64_t kQ = kHeads * kHeadDim, kKv = kKvHeads * kHeadDim;
// A ZeRO-3 shard of 1.5B parameters over 2 ranks, for the optimizer-side
// ops (accumulate, cast, sum of squares, AdamW).
constexpr int64_t kShard = 770'000'000;

void Check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
}

void Check(const absl::Status& status, const std::string& what) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", what.c_str(),
                 std::string(status.message()).c_str());
    std::exit(1);
  }
}

// Device allocations, filled with random bf16/f32 values in [-1, 1) by
// copying a random host pattern, freed at exit.
class Arena {
 public:
  Arena() {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    pattern_f32_.resize(kPattern);
    pattern_bf16_.resize(kPattern);
    for (int64_t i = 0; i < kPattern; ++i) {
      pattern_f32_[i] = dist(rng);
      pattern_bf16_[i] = k::FloatToBF16(pattern_f32_[i]);
    }
  }
  ~Arena() {
    for (void* p : allocations_) cudaFree(p);
  }

  runtime::TensorRef Tensor(DType dtype, int64_t elements) {
    const int64_t bytes = elements * k::DTypeSize(dtype);
    void* p = nullptr;
    Check(cudaMalloc(&p, static_cast<size_t>(bytes)), "cudaMalloc");
    allocations_.push_back(p);
    const void* pattern = dtype == DType::kF32
                              ? static_cast<const void*>(pattern_f32_.data())
                              : static_cast<const void*>(pattern_bf16_.data());
    const int64_t chunk = kPattern * k::DTypeSize(dtype);
    for (int64_t at = 0; at < bytes; at += chunk) {
      const int64_t n = bytes - at < chunk ? bytes - at : chunk;
      Check(cudaMemcpy(static_cast<char*>(p) + at, pattern,
                       static_cast<size_t>(n), cudaMemcpyHostToDevice),
            "cudaMemcpy");
    }
    const runtime::Buffer buffer(next_id_++, bytes,
                                 runtime::MemorySpace::kDevice, p);
    return runtime::TensorRef(buffer.All(), dtype);
  }

  // Non-negative values (second moments).
  runtime::TensorRef Positive(int64_t elements) {
    runtime::TensorRef t = Tensor(DType::kF32, elements);
    Check(cudaMemset(t.slice.data(), 0, static_cast<size_t>(elements) * 4),
          "cudaMemset");
    return t;
  }

  runtime::BufferSlice Ids(int64_t count, int32_t limit) {
    std::mt19937 rng(2);
    std::uniform_int_distribution<int32_t> dist(0, limit - 1);
    std::vector<int32_t> ids(count);
    for (int32_t& id : ids) id = dist(rng);
    void* p = nullptr;
    Check(cudaMalloc(&p, static_cast<size_t>(count) * 4), "cudaMalloc");
    allocations_.push_back(p);
    Check(cudaMemcpy(p, ids.data(), static_cast<size_t>(count) * 4,
                     cudaMemcpyHostToDevice),
          "cudaMemcpy");
    const runtime::Buffer buffer(next_id_++, count * 4,
                                 runtime::MemorySpace::kDevice, p);
    return buffer.All();
  }

 private:
  static constexpr int64_t kPattern = int64_t{1} << 22;
  std::vector<float> pattern_f32_;
  std::vector<uint16_t> pattern_bf16_;
  std::vector<void*> allocations_;
  uint64_t next_id_ = 1;
};

struct Bench {
  std::string name;
  std::string shape;
  double flops = 0;  // per call; 0 for memory-bound ops
  double bytes = 0;  // per call
  runtime::KernelCall call;
  const KernelContext* ctx = nullptr;
};

double TimeMs(const Bench& b, cudaStream_t stream, int iters) {
  for (int i = 0; i < 2; ++i)
    Check(LaunchKernel(b.call, stream, *b.ctx), b.name);
  Check(cudaStreamSynchronize(stream), "warm-up");
  cudaEvent_t start, stop;
  Check(cudaEventCreate(&start), "cudaEventCreate");
  Check(cudaEventCreate(&stop), "cudaEventCreate");
  Check(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) {
    Check(LaunchKernel(b.call, stream, *b.ctx), b.name);
  }
  Check(cudaEventRecord(stop, stream), "cudaEventRecord");
  Check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  Check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / iters;
}

double CopyBandwidthGBs(cudaStream_t stream) {
  const size_t bytes = size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  Check(cudaMalloc(&a, bytes), "cudaMalloc");
  Check(cudaMalloc(&b, bytes), "cudaMalloc");
  Check(cudaMemsetAsync(a, 0, bytes, stream), "cudaMemset");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  Check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream), "copy");
  cudaEventRecord(start, stream);
  const int iters = 10;
  for (int i = 0; i < iters; ++i) {
    cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream);
  }
  cudaEventRecord(stop, stream);
  Check(cudaEventSynchronize(stop), "copy");
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  // A copy reads and writes every byte.
  return 2.0 * bytes * iters / (ms * 1e-3) / 1e9;
}

double GemmFlops(const k::MatmulArgs& a) { return 2.0 * a.m * a.n * a.k; }

// Phi-3-mini's projections, split as zero3 runs them and fused (see the
// file comment); `add` as in Main.
constexpr int64_t kPhiHidden = 3072, kPhiFfn = 8192;

template <typename Add>
void AddPhi3Gemms(Arena& arena, Add& add) {
  const DType bf = DType::kBF16;
  const int64_t h = kPhiHidden, t = kTokens;
  const runtime::TensorRef x = arena.Tensor(bf, t * h);
  const runtime::TensorRef dx = arena.Tensor(bf, t * h);
  const runtime::TensorRef w = arena.Tensor(bf, 2 * kPhiFfn * h);
  const runtime::TensorRef dw = arena.Tensor(bf, 2 * kPhiFfn * h);
  const runtime::TensorRef out = arena.Tensor(bf, t * 2 * kPhiFfn);
  struct Proj {
    const char* split;  // one of the split GEMMs, run `parts` times
    const char* fused;
    int64_t width, parts;
  };
  for (const Proj& p : {Proj{"q_proj (x3)", "qkv_proj", h, 3},
                        Proj{"gate_proj (x2)", "gate_up_proj", kPhiFfn, 2}}) {
    for (const int64_t n : {p.width, p.width * p.parts}) {
      const std::string name =
          absl::StrCat("phi3 ", n == p.width ? "split " : "fused ",
                       n == p.width ? p.split : p.fused);
      const k::MatmulArgs args[] = {k::LinearForwardArgs(t, h, n),
                                    k::LinearBackwardInputArgs(t, h, n, 1.0f),
                                    k::LinearBackwardWeightArgs(t, h, n, 0.0f)};
      const char* pass[] = {" fwd", " bwd input", " bwd weight"};
      const runtime::TensorRef operands[3][3] = {
          {x, w, out}, {out, w, dx}, {out, x, dw}};
      for (int i = 0; i < 3; ++i) {
        ops::Matmul op;
        op.args = args[i];
        op.a = operands[i][0];
        op.b = operands[i][1];
        op.c = operands[i][2];
        add(name + pass[i],
            absl::StrCat(args[i].m, "x", args[i].n, "x", args[i].k),
            GemmFlops(args[i]), 0, op);
      }
    }
  }
}

// For each "phi3 fused" row with its split rows: the split GEMM times its
// count against the fused one.
void PrintFusedSummary(
    const std::vector<std::pair<std::string, double>>& times) {
  auto find = [&](const std::string& name) {
    for (const auto& [n, ms] : times) {
      if (n == name) return ms;
    }
    return -1.0;
  };
  for (const auto& [split, parts, fused] :
       {std::make_tuple("q_proj (x3)", 3, "qkv_proj"),
        std::make_tuple("gate_proj (x2)", 2, "gate_up_proj")}) {
    for (const char* pass : {" fwd", " bwd input", " bwd weight"}) {
      const double s = find(absl::StrCat("phi3 split ", split, pass));
      const double f = find(absl::StrCat("phi3 fused ", fused, pass));
      if (s < 0 || f < 0) continue;
      std::printf("phi3 %s%s: split %d x %.3f = %.3f ms, fused %.3f ms\n",
                  fused, pass, parts, s, parts * s, f);
    }
  }
}

int Main(int argc, char** argv) {
  int iters = 20;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (absl::StartsWith(arg, "--iters=")) {
      if (!absl::SimpleAtoi(arg.substr(8), &iters) || iters < 1) {
        std::fprintf(stderr, "bad %s\n", arg.c_str());
        return 2;
      }
    } else {
      filter = arg;
    }
  }
  cudaDeviceProp prop;
  Check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  cudaStream_t stream;
  Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "cudaStreamCreate");
  auto ctx = CreateKernelContext(stream);
  Check(ctx.status(), "CreateKernelContext");
  KernelContextOptions simple_options;
  simple_options.attention = AttentionKernels::kSimple;
  auto simple_ctx = CreateKernelContext(stream, simple_options);
  Check(simple_ctx.status(), "CreateKernelContext");

  std::printf("device: %s, %d SMs, %.1f GiB\n", prop.name,
              prop.multiProcessorCount,
              static_cast<double>(prop.totalGlobalMem) / (1 << 30));
  std::printf("device-to-device copy: %.0f GB/s (read + write)\n",
              CopyBandwidthGBs(stream));
  std::printf(
      "shapes: Qwen2.5-1.5B, %lld x %lld tokens, hidden %lld, heads %lld/%lld "
      "x %lld, ffn %lld, vocab %lld, bf16; iters %d\n\n",
      static_cast<long long>(kBatch), static_cast<long long>(kSeq),
      static_cast<long long>(kHidden), static_cast<long long>(kHeads),
      static_cast<long long>(kKvHeads), static_cast<long long>(kHeadDim),
      static_cast<long long>(kFfn), static_cast<long long>(kVocab), iters);

  Arena arena;
  const DType bf = DType::kBF16, f32 = DType::kF32;
  const double e = 2.0;  // bytes per bf16
  std::vector<Bench> benches;
  auto add = [&](std::string name, std::string shape, double flops,
                 double bytes, runtime::Op op,
                 const KernelContext* context = nullptr) {
    if (!filter.empty() && !absl::StrContains(name, filter)) return;
    Bench b{std::move(name),
            std::move(shape),
            flops,
            bytes,
            runtime::KernelCall(std::move(op), "bench"),
            context != nullptr ? context : ctx->get()};
    benches.push_back(std::move(b));
  };

  // Activations and weights, shared across ops where shapes agree.
  const runtime::BufferSlice tokens = arena.Ids(kTokens, kVocab);
  const runtime::BufferSlice targets = arena.Ids(kTokens, kVocab);
  const runtime::TensorRef x = arena.Tensor(bf, kTokens * kHidden);
  const runtime::TensorRef x2 = arena.Tensor(bf, kTokens * kHidden);
  const runtime::TensorRef y = arena.Tensor(bf, kTokens * kHidden);
  const runtime::TensorRef w_norm = arena.Tensor(bf, kHidden);
  const runtime::TensorRef dw_norm = arena.Tensor(f32, kHidden);
  const runtime::TensorRef rstd = arena.Positive(kTokens);
  const runtime::TensorRef q = arena.Tensor(bf, kTokens * kQ);
  const runtime::TensorRef kk = arena.Tensor(bf, kTokens * kKv);
  const runtime::TensorRef v = arena.Tensor(bf, kTokens * kKv);
  const runtime::TensorRef att = arena.Tensor(bf, kTokens * kQ);
  const runtime::TensorRef lse = arena.Tensor(f32, kBatch * kHeads * kSeq);
  const runtime::TensorRef datt = arena.Tensor(bf, kTokens * kQ);
  const runtime::TensorRef dq = arena.Tensor(bf, kTokens * kQ);
  const runtime::TensorRef dk = arena.Tensor(bf, kTokens * kKv);
  const runtime::TensorRef dv = arena.Tensor(bf, kTokens * kKv);
  const runtime::TensorRef gate = arena.Tensor(bf, kTokens * kFfn);
  const runtime::TensorRef up = arena.Tensor(bf, kTokens * kFfn);
  const runtime::TensorRef mlp = arena.Tensor(bf, kTokens * kFfn);
  const runtime::TensorRef dgate = arena.Tensor(bf, kTokens * kFfn);
  const runtime::TensorRef dup = arena.Tensor(bf, kTokens * kFfn);
  const runtime::TensorRef wq = arena.Tensor(bf, kQ * kHidden);
  const runtime::TensorRef wkv = arena.Tensor(bf, kKv * kHidden);
  const runtime::TensorRef wg = arena.Tensor(bf, kFfn * kHidden);
  const runtime::TensorRef wd = arena.Tensor(bf, kHidden * kFfn);
  const runtime::TensorRef gwg = arena.Tensor(bf, kFfn * kHidden);
  const runtime::TensorRef emb = arena.Tensor(bf, kVocab * kHidden);
  const runtime::TensorRef demb = arena.Tensor(bf, kVocab * kHidden);
  const runtime::TensorRef logits = arena.Tensor(bf, kTokens * kVocab);
  const runtime::TensorRef lse_ce = arena.Tensor(f32, kTokens);
  const runtime::TensorRef loss = arena.Tensor(f32, 1);
  const runtime::TensorRef bias = arena.Tensor(bf, kQ);
  const runtime::TensorRef dbias = arena.Tensor(f32, kQ);

  AddPhi3Gemms(arena, add);
  const std::string th = absl::StrCat(kTokens, "x", kHidden);
  {
    ops::EmbeddingForward op;
    op.args = {kTokens, kVocab, kHidden};
    op.tokens = tokens;
    op.table = emb;
    op.out = x;
    add("embedding_fwd", th, 0, 2 * kTokens * kHidden * e, op);
    ops::EmbeddingBackward bop;
    bop.args = op.args;
    bop.tokens = tokens;
    bop.d_out = x;
    bop.d_table = demb;
    add("embedding_bwd", th, 0, 3 * kTokens * kHidden * e, bop);
  }
  {
    ops::RmsNormForward op;
    op.args.rows = kTokens;
    op.args.dim = kHidden;
    op.x = x;
    op.weight = w_norm;
    op.y = y;
    op.rstd = rstd;
    add("rmsnorm_fwd", th, 0, 2 * kTokens * kHidden * e, op);
    ops::RmsNormBackward bop;
    bop.args = op.args;
    bop.x = x;
    bop.weight = w_norm;
    bop.rstd = rstd;
    bop.dy = y;
    bop.dx = x2;
    bop.d_weight = dw_norm;
    add("rmsnorm_bwd", th, 0, 3 * kTokens * kHidden * e, bop);
  }
  // The GEMMs of one layer and the LM head.
  struct Gemm {
    const char* name;
    k::MatmulArgs args;
    runtime::TensorRef a, b, c;
  };
  const Gemm gemms[] = {
      {"matmul q_proj fwd", k::LinearForwardArgs(kTokens, kHidden, kQ), y, wq,
       q},
      {"matmul k_proj fwd", k::LinearForwardArgs(kTokens, kHidden, kKv), y, wkv,
       kk},
      {"matmul gate_proj fwd", k::LinearForwardArgs(kTokens, kHidden, kFfn), y,
       wg, gate},
      {"matmul down_proj fwd", k::LinearForwardArgs(kTokens, kFfn, kHidden),
       mlp, wd, x2},
      {"matmul gate_proj bwd input",
       k::LinearBackwardInputArgs(kTokens, kHidden, kFfn), dgate, wg, x2},
      {"matmul gate_proj bwd weight",
       k::LinearBackwardWeightArgs(kTokens, kHidden, kFfn, 0.0f), dgate, y,
       gwg},
      {"matmul lm_head fwd", k::LinearForwardArgs(kTokens, kHidden, kVocab), y,
       emb, logits},
      {"matmul lm_head bwd input",
       k::LinearBackwardInputArgs(kTokens, kHidden, kVocab), logits, emb, x2},
      {"matmul lm_head bwd weight",
       k::LinearBackwardWeightArgs(kTokens, kHidden, kVocab, 0.0f), logits, y,
       demb},
  };
  for (const Gemm& g : gemms) {
    ops::Matmul op;
    op.args = g.args;
    op.a = g.a;
    op.b = g.b;
    op.c = g.c;
    add(g.name, absl::StrCat(g.args.m, "x", g.args.n, "x", g.args.k),
        GemmFlops(g.args), 0, op);
  }
  {
    ops::BiasAdd op;
    op.args = {kTokens, kQ};
    op.bias = bias;
    op.x = q;
    add("bias_add", absl::StrCat(kTokens, "x", kQ), 0, 2 * kTokens * kQ * e,
        op);
    ops::BiasBackward bop;
    bop.args = op.args;
    bop.dy = q;
    bop.d_bias = dbias;
    add("bias_bwd", absl::StrCat(kTokens, "x", kQ), 0, kTokens * kQ * e, bop);
  }
  {
    ops::RotaryForward op;
    op.args.batch = kBatch;
    op.args.seq = kSeq;
    op.args.heads = kHeads;
    op.args.head_dim = kHeadDim;
    op.args.theta = 1e6f;
    op.x = q;
    op.y = q;
    add("rotary_fwd q", absl::StrCat(kTokens, "x", kHeads, "x", kHeadDim), 0,
        2 * kTokens * kQ * e, op);
    ops::RotaryBackward bop;
    bop.args = op.args;
    bop.dy = dq;
    bop.dx = dq;
    add("rotary_bwd q", absl::StrCat(kTokens, "x", kHeads, "x", kHeadDim), 0,
        2 * kTokens * kQ * e, bop);
  }
  {
    k::AttentionArgs args;
    args.batch = kBatch;
    args.seq = kSeq;
    args.num_heads = kHeads;
    args.num_kv_heads = kKvHeads;
    args.head_dim = kHeadDim;
    const double fwd_flops =
        4.0 * kBatch * kHeads * kSeq * kSeq * kHeadDim / 2;  // causal
    const std::string shape = absl::StrCat(kBatch, "x", kSeq, " h", kHeads, "/",
                                           kKvHeads, " d", kHeadDim, " causal");
    ops::AttentionForward op;
    op.args = args;
    op.q = q;
    op.k = kk;
    op.v = v;
    op.out = att;
    op.lse = lse;
    ops::AttentionBackward bop;
    bop.args = args;
    bop.q = q;
    bop.k = kk;
    bop.v = v;
    bop.out = att;
    bop.lse = lse;
    bop.d_out = datt;
    bop.dq = dq;
    bop.dk = dk;
    bop.dv = dv;
    // The backward pass needs the forward's lse: run the forward once first
    // (the benchmark list is run in order).
    add("attention_fwd [tensor cores]", shape, fwd_flops, 0, op);
    add("attention_bwd [tensor cores]", shape, 2.5 * fwd_flops, 0, bop);
    add("attention_fwd [cuda cores]", shape, fwd_flops, 0, op,
        simple_ctx->get());
    add("attention_bwd [cuda cores]", shape, 2.5 * fwd_flops, 0, bop,
        simple_ctx->get());
  }
  {
    const int64_t n = kTokens * kFfn;
    ops::SwigluForward op;
    op.args.n = n;
    op.gate = gate;
    op.up = up;
    op.h = mlp;
    add("swiglu_fwd", absl::StrCat(kTokens, "x", kFfn), 0, 3 * n * e, op);
    ops::SwigluBackward bop;
    bop.args.n = n;
    bop.gate = gate;
    bop.up = up;
    bop.dh = mlp;
    bop.d_gate = dgate;
    bop.d_up = dup;
    add("swiglu_bwd", absl::StrCat(kTokens, "x", kFfn), 0, 5 * n * e, bop);
  }
  {
    ops::Add op;
    op.args.n = kTokens * kHidden;
    op.a = x;
    op.b = y;
    op.out = x2;
    add("add (residual)", th, 0, 3 * kTokens * kHidden * e, op);
  }
  {
    const std::string shape = absl::StrCat(kTokens, "x", kVocab);
    const double logit_bytes = static_cast<double>(kTokens) * kVocab * e;
    ops::CrossEntropyForward op;
    op.args.num_tokens = kTokens;
    op.args.vocab_size = kVocab;
    op.logits = logits;
    op.targets = targets;
    op.lse = lse_ce;
    op.loss = loss;
    add("cross_entropy_fwd", shape, 0, logit_bytes, op);
    ops::CrossEntropyBackward bop;
    bop.args = op.args;
    bop.logits = logits;
    bop.targets = targets;
    bop.lse = lse_ce;
    bop.d_logits = logits;  // in place, as the model runs it
    add("cross_entropy_bwd", shape, 0, 2 * logit_bytes, bop);
  }
  {
    // Optimizer-side ops over a gradient shard.
    const runtime::TensorRef grad_bf16 = arena.Tensor(bf, kShard);
    const runtime::TensorRef grad = arena.Tensor(f32, kShard);
    const runtime::TensorRef params = arena.Tensor(f32, kShard);
    const runtime::TensorRef m = arena.Tensor(f32, kShard);
    const runtime::TensorRef v2 = arena.Positive(kShard);
    const runtime::TensorRef norm = arena.Tensor(f32, 2);
    const std::string shape = absl::StrCat(kShard);
    ops::Accumulate acc;
    acc.args.n = kShard;
    acc.x = grad_bf16;
    acc.y = grad;
    add("accumulate bf16->f32", shape, 0, kShard * (2.0 + 8.0), acc);
    ops::Cast cast;
    cast.args = {kShard, f32, bf};
    cast.src = grad;
    cast.dst = grad_bf16;
    add("cast f32->bf16", shape, 0, kShard * 6.0, cast);
    ops::Scale scale;
    scale.args.n = kShard;
    scale.args.alpha = 1.0f;
    scale.x = grad;
    add("scale f32", shape, 0, kShard * 8.0, scale);
    ops::Fill fill;
    fill.args.n = kShard;
    fill.args.value = 0.5f;
    fill.x = grad_bf16;
    add("fill bf16", shape, 0, kShard * 2.0, fill);
    ops::SumSquares ss;
    ss.args.n = kShard;
    ss.x = grad;
    ss.out = norm;
    add("sum_squares f32", shape, 0, kShard * 4.0, ss);
    ops::AdamW adam;
    adam.args.n = kShard;
    adam.params = params;
    adam.grads = grad;
    adam.exp_avg = m;
    adam.exp_avg_sq = v2;
    add("adamw", shape, 0, kShard * 28.0, adam);
  }

  std::printf("%-32s %-28s %10s %10s %10s\n", "op", "shape", "ms", "TFLOP/s",
              "GB/s");
  std::vector<std::pair<std::string, double>> times;
  for (const Bench& b : benches) {
    const double ms = TimeMs(b, stream, iters);
    times.emplace_back(b.name, ms);
    const double seconds = ms * 1e-3;
    std::printf("%-32s %-28s %10.3f", b.name.c_str(), b.shape.c_str(), ms);
    if (b.flops > 0) {
      std::printf(" %10.1f %10s\n", b.flops / seconds / 1e12, "");
    } else {
      std::printf(" %10s %10.0f\n", "", b.bytes / seconds / 1e9);
    }
    std::fflush(stdout);
  }
  PrintFusedSummary(times);
  Check((*ctx)->ConsumeDeviceErrors(), "device errors");
  Check(cudaStreamSynchronize(stream), "sync");
  ctx->reset();
  simple_ctx->reset();
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace
}  // namespace cuda
}  // namespace zero3

int main(int argc, char** argv) { return zero3::cuda::Main(argc, argv); }
