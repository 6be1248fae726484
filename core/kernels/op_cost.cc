// Copyright 2026 The zero3 Authors.

#include "core/kernels/op_cost.h"

#include "core/util/check.h"

namespace zero3 {
namespace kernels {
namespace {

// Token ids, targets and saved statistics are 4-byte types.
constexpr int64_t kIndexBytes = 4;
constexpr int64_t kStatBytes = 4;

OpCost Cost(int64_t flops, int64_t bytes_read, int64_t bytes_written) {
  ZR_CHECK_GE(flops, int64_t{0});
  ZR_CHECK_GE(bytes_read, int64_t{0});
  ZR_CHECK_GE(bytes_written, int64_t{0});
  OpCost cost;
  cost.flops = flops;
  cost.bytes_read = bytes_read;
  cost.bytes_written = bytes_written;
  return cost;
}

// An elementwise op over n elements: flops_per_element * n flops, `reads`
// inputs and `writes` outputs of element size s.
OpCost Elementwise(int64_t n, int64_t flops_per_element, int64_t reads,
                   int64_t writes, DType dtype) {
  const int64_t s = DTypeSize(dtype);
  return Cost(flops_per_element * n, reads * n * s, writes * n * s);
}

int64_t AttentionForwardFlops(const AttentionArgs& args) {
  // 2*S^2*D for Q*K^T and again for P*V, per (batch, query head); a causal
  // mask leaves half the score matrix (the usual S^2/2 approximation of
  // S(S+1)/2), a sliding window W < S about S*W - W^2/2 of it (the GPU
  // kernels skip the tiles before each query tile's window).
  const int64_t per_pair = 4 * args.batch * args.num_heads * args.head_dim;
  const int64_t s = args.seq, w = args.window;
  if (args.causal && w > 0 && w < s) return per_pair * (s * w - w * w / 2);
  const int64_t full = per_pair * s * s;
  return args.causal ? full / 2 : full;
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const OpCost& cost) {
  return os << "{flops=" << cost.flops << " read=" << cost.bytes_read
            << " written=" << cost.bytes_written << "}";
}

OpCost EmbeddingForwardCost(const EmbeddingArgs& args, DType dtype) {
  const int64_t rows = args.num_tokens * args.dim * DTypeSize(dtype);
  return Cost(0, kIndexBytes * args.num_tokens + rows, rows);
}

OpCost EmbeddingBackwardCost(const EmbeddingArgs& args, DType dtype) {
  const int64_t rows = args.num_tokens * args.dim * DTypeSize(dtype);
  return Cost(args.num_tokens * args.dim,
              kIndexBytes * args.num_tokens + 2 * rows, rows);
}

OpCost MatmulCost(const MatmulArgs& args, DType dtype) {
  const int64_t s = DTypeSize(dtype);
  const int64_t c_elements = args.m * args.n;
  int64_t read = (args.m * args.k + args.k * args.n) * s;
  if (args.beta != 0.0f) read += c_elements * s;
  return Cost(2 * args.m * args.n * args.k, read, c_elements * s);
}

OpCost BiasAddCost(const BiasArgs& args, DType dtype) {
  const int64_t s = DTypeSize(dtype);
  const int64_t n = args.rows * args.cols;
  return Cost(n, (n + args.cols) * s, n * s);
}

OpCost BiasBackwardCost(const BiasArgs& args, DType dtype) {
  const int64_t s = DTypeSize(dtype);
  const int64_t n = args.rows * args.cols;
  return Cost(n, (n + args.cols) * s, args.cols * s);
}

OpCost RmsNormForwardCost(const RmsNormArgs& args, DType dtype) {
  const int64_t s = DTypeSize(dtype);
  const int64_t n = args.rows * args.dim;
  return Cost(4 * n, (n + args.dim) * s, n * s + kStatBytes * args.rows);
}

OpCost RmsNormBackwardCost(const RmsNormArgs& args, DType dtype) {
  const int64_t s = DTypeSize(dtype);
  const int64_t n = args.rows * args.dim;
  return Cost(9 * n, (2 * n + 2 * args.dim) * s + kStatBytes * args.rows,
              (n + args.dim) * s);
}

OpCost RotaryForwardCost(const RotaryArgs& args, DType dtype) {
  const int64_t n = args.batch * args.seq * args.heads * args.head_dim;
  return Elementwise(n, 3, 1, 1, dtype);
}

OpCost RotaryBackwardCost(const RotaryArgs& args, DType dtype) {
  return RotaryForwardCost(args, dtype);
}

OpCost AttentionForwardCost(const AttentionArgs& args, DType dtype) {
  const int64_t s = DTypeSize(dtype);
  const int64_t q = args.batch * args.seq * args.num_heads * args.head_dim;
  const int64_t kv = args.batch * args.seq * args.num_kv_heads * args.head_dim;
  const int64_t lse = args.batch * args.num_heads * args.seq;
  return Cost(AttentionForwardFlops(args), (q + 2 * kv) * s,
              q * s + kStatBytes * lse);
}

OpCost AttentionBackwardCost(const AttentionArgs& args, DType dtype) {
  const int64_t s = DTypeSize(dtype);
  const int64_t q = args.batch * args.seq * args.num_heads * args.head_dim;
  const int64_t kv = args.batch * args.seq * args.num_kv_heads * args.head_dim;
  const int64_t lse = args.batch * args.num_heads * args.seq;
  // The forward count is even (a factor 2 remains after halving), so 2.5x
  // is exact in integers.
  return Cost(AttentionForwardFlops(args) / 2 * 5,
              (3 * q + 2 * kv) * s + kStatBytes * lse, (q + 2 * kv) * s);
}

// GELU's tanh approximation takes a cubic and a tanh where SiLU takes an
// exp: a few more flops per element, the same bytes.
OpCost SwigluForwardCost(const SwigluArgs& args, DType dtype) {
  const bool gelu = args.activation == GluActivation::kGeluTanh;
  return Elementwise(args.n, gelu ? 10 : 6, 2, 1, dtype);
}

OpCost SwigluBackwardCost(const SwigluArgs& args, DType dtype) {
  const bool gelu = args.activation == GluActivation::kGeluTanh;
  return Elementwise(args.n, gelu ? 18 : 12, 3, 2, dtype);
}

// Soft-capping adds a division, a tanh and a product per logit each way.
OpCost CrossEntropyForwardCost(const CrossEntropyArgs& args, DType dtype) {
  const int64_t n = args.num_tokens * args.vocab_size;
  const int64_t per = args.logit_softcap > 0 ? 7 : 4;
  return Cost(per * n, n * DTypeSize(dtype) + kIndexBytes * args.num_tokens,
              kStatBytes * args.num_tokens);
}

OpCost CrossEntropyBackwardCost(const CrossEntropyArgs& args, DType dtype) {
  const int64_t s = DTypeSize(dtype);
  const int64_t n = args.num_tokens * args.vocab_size;
  const int64_t per = args.logit_softcap > 0 ? 8 : 4;
  return Cost(per * n, n * s + (kIndexBytes + kStatBytes) * args.num_tokens,
              n * s);
}

OpCost CrossEntropyLossCost(const CrossEntropyArgs& args) {
  return Cost(2 * args.num_tokens, (kIndexBytes + 8) * args.num_tokens,
              kStatBytes);
}

OpCost AccumulateCost(const AccumulateArgs& args, DType dtype) {
  return AccumulateCost(args, dtype, dtype);
}

OpCost AccumulateCost(const AccumulateArgs& args, DType x_dtype,
                      DType y_dtype) {
  return Cost(2 * args.n, args.n * (DTypeSize(x_dtype) + DTypeSize(y_dtype)),
              args.n * DTypeSize(y_dtype));
}

OpCost ScaleCost(const ScaleArgs& args, DType dtype) {
  return Elementwise(args.n, 1, 1, 1, dtype);
}

OpCost FillCost(const FillArgs& args, DType dtype) {
  return Elementwise(args.n, 0, 0, 1, dtype);
}

OpCost AddCost(const AddArgs& args, DType dtype) {
  return Elementwise(args.n, 1, 2, 1, dtype);
}

OpCost CastCost(const CastArgs& args) {
  return Cost(0, args.n * DTypeSize(args.src), args.n * DTypeSize(args.dst));
}

OpCost SumSquaresCost(const ReduceArgs& args, DType dtype) {
  return Elementwise(args.n, 2, 1, 0, dtype);
}

OpCost AllFiniteCost(const ReduceArgs& args, DType dtype) {
  return Elementwise(args.n, 1, 1, 0, dtype);
}

OpCost AdamWCost(const AdamWArgs& args, DType params_dtype,
                 DType moments_dtype) {
  const int64_t per_element = args.weight_decay > 0.0f ? 15 : 13;
  // Each state read and written, the gradients read.
  const int64_t state = DTypeSize(params_dtype) + 2 * DTypeSize(moments_dtype);
  return Cost(per_element * args.n, (state + 4) * args.n, state * args.n);
}

}  // namespace kernels
}  // namespace zero3
