// Copyright 2026 The zero3 Authors.

#include "core/kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/types/span.h"
#include "core/kernels/dtype.h"
#include "core/util/check.h"

namespace zero3 {
namespace kernels {
namespace {

void CheckNonNegative(int64_t value, const char* name) {
  ZR_CHECK_GE(value, int64_t{0}) << name << " must be non-negative";
}

// ---------------------------------------------------------------------------
// Matmul. Row i of C is built as sum_p a(i, p) * B[p, :] (i-k-j order): the
// innermost loop walks a row of B and a row of C contiguously, which the
// compiler vectorizes without reordering any sum (each C element still adds
// its k products in order p = 0, 1, ...). A B stored transposed is first
// copied into [k, n] layout so that it takes the same path.

template <typename T>
void MatmulRowMajorB(const MatmulArgs& args, const T* a, const T* b, T* c) {
  const int64_t m = args.m, n = args.n, k = args.k;
  const T alpha = static_cast<T>(args.alpha);
  const T beta = static_cast<T>(args.beta);
  std::vector<T> row(n);
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), T(0));
    for (int64_t p = 0; p < k; ++p) {
      const T a_ip = args.trans_a ? a[p * m + i] : a[i * k + p];
      const T* b_row = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += a_ip * b_row[j];
    }
    T* c_row = c + i * n;
    if (args.beta == 0.0f) {
      for (int64_t j = 0; j < n; ++j) c_row[j] = alpha * row[j];
    } else {
      for (int64_t j = 0; j < n; ++j) {
        c_row[j] = alpha * row[j] + beta * c_row[j];
      }
    }
  }
}

template <typename T>
T Sigmoid(T x) {
  // exp(-x) overflows to inf for very negative x, giving exactly 0: no NaN.
  return T(1) / (T(1) + std::exp(-x));
}

// GELU's tanh approximation (PyTorch's gelu(approximate="tanh")) and its
// derivative.
constexpr double kGeluC = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluA = 0.044715;

template <typename T>
T GeluTanh(T x) {
  const T t = std::tanh(T(kGeluC) * (x + T(kGeluA) * x * x * x));
  return T(0.5) * x * (T(1) + t);
}

template <typename T>
T GeluTanhGrad(T x) {
  const T t = std::tanh(T(kGeluC) * (x + T(kGeluA) * x * x * x));
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * T(kGeluC) *
                                   (T(1) + T(3 * kGeluA) * x * x);
}

// Soft-capping: cap * tanh(x / cap), or x where cap is 0.
template <typename T>
T Softcap(T x, float cap) {
  return cap > 0 ? T(cap) * std::tanh(x / T(cap)) : x;
}

// The derivative of Softcap at the point where it returned `capped`.
template <typename T>
T SoftcapGrad(T capped, float cap) {
  if (!(cap > 0)) return T(1);
  const T t = capped / T(cap);
  return T(1) - t * t;
}

void CheckCap(float cap, const char* name) {
  ZR_CHECK(cap >= 0 && std::isfinite(cap)) << name << " " << cap;
}

// Inverse frequencies theta^(-2i / head_dim), i < head_dim / 2, in double so
// float and double runs see the same rotation up to the final rounding.
std::vector<double> RotaryInverseFrequencies(const RotaryArgs& args) {
  const int64_t dim = args.RotaryDim();
  std::vector<double> inv_freq(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) {
    inv_freq[i] = args.has_inv_freq ? static_cast<double>(args.inv_freq[i])
                                    : std::pow(static_cast<double>(args.theta),
                                               -2.0 * static_cast<double>(i) /
                                                   static_cast<double>(dim));
  }
  return inv_freq;
}

void CheckRotaryArgs(const RotaryArgs& args) {
  CheckNonNegative(args.batch, "batch");
  CheckNonNegative(args.seq, "seq");
  CheckNonNegative(args.heads, "heads");
  ZR_CHECK_GT(args.head_dim, int64_t{0});
  ZR_CHECK_EQ(args.head_dim % 2, int64_t{0}) << "rotary head_dim must be even";
  ZR_CHECK(args.rotary_dim >= 0 && args.rotary_dim <= args.head_dim &&
           args.rotary_dim % 2 == 0)
      << "rotary_dim must be even and at most head_dim";
  ZR_CHECK(!args.has_inv_freq || args.RotaryDim() / 2 <= kMaxRotaryPairs)
      << "at most " << kMaxRotaryPairs << " rotary pairs";
  ZR_CHECK_GT(args.theta, 0.0f);
}

// Applies the rotation (sign = +1) or its inverse (sign = -1). Reads both
// elements of a pair before writing either, so in-place use is safe.
// Row (b, s)'s position: s, or positions[b * seq + s] (checked: 0 to s).
int64_t PositionOf(const int32_t* positions, int64_t seq, int64_t b,
                   int64_t s) {
  if (positions == nullptr) return s;
  const int64_t p = positions[b * seq + s];
  ZR_CHECK(p >= 0 && p <= s) << "position " << p << " of row " << s;
  return p;
}

template <typename T>
void Rotate(const RotaryArgs& args, double sign, const T* x, T* y,
            const int32_t* positions) {
  CheckRotaryArgs(args);
  const int64_t half = args.RotaryDim() / 2;
  const double scaling = args.attention_scaling;
  const std::vector<double> inv_freq = RotaryInverseFrequencies(args);
  // cos and sin of every (position, frequency), shared by batches and heads.
  std::vector<T> cos_table(args.seq * half), sin_table(args.seq * half);
  for (int64_t s = 0; s < args.seq; ++s) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(s) * inv_freq[i];
      cos_table[s * half + i] = static_cast<T>(std::cos(angle) * scaling);
      sin_table[s * half + i] =
          static_cast<T>(sign * std::sin(angle) * scaling);
    }
  }
  for (int64_t b = 0; b < args.batch; ++b) {
    for (int64_t s = 0; s < args.seq; ++s) {
      const int64_t p = PositionOf(positions, args.seq, b, s);
      const T* cos_a = cos_table.data() + p * half;
      const T* sin_a = sin_table.data() + p * half;
      const int64_t row = (b * args.seq + s) * args.heads * args.head_dim;
      for (int64_t h = 0; h < args.heads; ++h) {
        const T* xh = x + row + h * args.head_dim;
        T* yh = y + row + h * args.head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const T c = cos_a[i];
          const T sn = sin_a[i];
          const T x1 = xh[i];
          const T x2 = xh[i + half];
          yh[i] = x1 * c - x2 * sn;
          yh[i + half] = x2 * c + x1 * sn;
        }
        if (yh != xh) {
          for (int64_t i = 2 * half; i < args.head_dim; ++i) yh[i] = xh[i];
        }
      }
    }
  }
}

void CheckAttentionArgs(const AttentionArgs& args) {
  CheckNonNegative(args.batch, "batch");
  CheckNonNegative(args.seq, "seq");
  ZR_CHECK_GT(args.num_heads, int64_t{0});
  ZR_CHECK_GT(args.num_kv_heads, int64_t{0});
  ZR_CHECK_EQ(args.num_heads % args.num_kv_heads, int64_t{0})
      << "num_heads must be a multiple of num_kv_heads";
  ZR_CHECK_GT(args.head_dim, int64_t{0});
  CheckNonNegative(args.window, "window");
  ZR_CHECK(args.window == 0 || args.causal)
      << "a sliding window needs causal attention";
  CheckCap(args.scale, "scale");
  CheckCap(args.softcap, "softcap");
}

template <typename T>
T Dot(const T* a, const T* b, int64_t n) {
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void CheckCrossEntropyArgs(const CrossEntropyArgs& args) {
  CheckNonNegative(args.num_tokens, "num_tokens");
  CheckNonNegative(args.batch_tokens, "batch_tokens");
  CheckNonNegative(args.row_offset, "row_offset");
  ZR_CHECK_GT(args.vocab_size, int64_t{0});
  ZR_CHECK_LE(args.row_offset + args.num_tokens, args.BatchTokens());
  ZR_CHECK(args.loss_divisor >= 0 && std::isfinite(args.loss_divisor))
      << "loss_divisor " << args.loss_divisor;
  CheckCap(args.logit_softcap, "logit_softcap");
}

// Number of counted rows of the batch; checks every target.
int64_t CountTargets(const CrossEntropyArgs& args, const int32_t* targets) {
  int64_t count = 0;
  for (int64_t t = 0; t < args.BatchTokens(); ++t) {
    const int32_t target = targets[t];
    if (target == args.ignore_index) continue;
    ZR_CHECK(target >= 0 && target < args.vocab_size)
        << "target " << target << " of row " << t << " outside [0, "
        << args.vocab_size << ")";
    ++count;
  }
  return count;
}

// AdamW inner loop, specialised on the two weight-decay modes so the loop
// body has no branches and the compiler can vectorize it. The operation
// order is DeepSpeed's (cpu_adam_impl.cpp, Step_1) so float results match.
template <bool kL2, bool kDecoupled>
void AdamWLoop(int64_t n, float* __restrict params,
               const float* __restrict grads, float* __restrict exp_avg,
               float* __restrict exp_avg_sq, float grad_scale, float beta1,
               float beta2, float eps, float weight_decay, float step_size,
               float w_decay, float bias_correction2) {
  const float beta1_minus1 = 1 - beta1;
  const float beta2_minus1 = 1 - beta2;
  for (int64_t i = 0; i < n; ++i) {
    float grad = grads[i] * grad_scale;
    float param = params[i];
    float momentum = exp_avg[i];
    float variance = exp_avg_sq[i];
    if (kL2) grad = param * weight_decay + grad;
    momentum = momentum * beta1;
    momentum = grad * beta1_minus1 + momentum;
    variance = variance * beta2;
    grad = grad * grad;
    variance = grad * beta2_minus1 + variance;
    float denom = std::sqrt(variance);
    denom = denom * bias_correction2 + eps;
    const float update = momentum / denom;
    if (kDecoupled) param += w_decay * param;
    param = update * step_size + param;
    params[i] = param;
    exp_avg[i] = momentum;
    exp_avg_sq[i] = variance;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Embedding

template <typename T>
void EmbeddingForward(const EmbeddingArgs& args, const int32_t* tokens,
                      const T* table, T* out) {
  CheckNonNegative(args.num_tokens, "num_tokens");
  CheckNonNegative(args.dim, "dim");
  for (int64_t t = 0; t < args.num_tokens; ++t) {
    const int32_t token = tokens[t];
    ZR_CHECK(token >= 0 && token < args.vocab_size)
        << "token " << token << " at " << t << " outside [0, "
        << args.vocab_size << ")";
    std::copy_n(table + token * args.dim, args.dim, out + t * args.dim);
  }
}

template <typename T>
void EmbeddingBackward(const EmbeddingArgs& args, const int32_t* tokens,
                       const T* d_out, T* d_table) {
  CheckNonNegative(args.num_tokens, "num_tokens");
  CheckNonNegative(args.dim, "dim");
  for (int64_t t = 0; t < args.num_tokens; ++t) {
    const int32_t token = tokens[t];
    ZR_CHECK(token >= 0 && token < args.vocab_size)
        << "token " << token << " at " << t << " outside [0, "
        << args.vocab_size << ")";
    T* row = d_table + token * args.dim;
    const T* d_row = d_out + t * args.dim;
    for (int64_t d = 0; d < args.dim; ++d) row[d] += d_row[d];
  }
}

// ---------------------------------------------------------------------------
// Matmul

template <typename T>
void Matmul(const MatmulArgs& args, const T* a, const T* b, T* c) {
  CheckNonNegative(args.m, "m");
  CheckNonNegative(args.n, "n");
  CheckNonNegative(args.k, "k");
  if (!args.trans_b) {
    MatmulRowMajorB(args, a, b, c);
    return;
  }
  // B is stored [n, k]: transpose it into scratch.
  std::vector<T> b_t(args.k * args.n);
  for (int64_t j = 0; j < args.n; ++j) {
    for (int64_t p = 0; p < args.k; ++p) {
      b_t[p * args.n + j] = b[j * args.k + p];
    }
  }
  MatmulRowMajorB(args, a, b_t.data(), c);
}

// ---------------------------------------------------------------------------
// Bias

template <typename T>
void BiasAdd(const BiasArgs& args, const T* bias, T* x) {
  CheckNonNegative(args.rows, "rows");
  CheckNonNegative(args.cols, "cols");
  for (int64_t r = 0; r < args.rows; ++r) {
    T* row = x + r * args.cols;
    for (int64_t c = 0; c < args.cols; ++c) row[c] += bias[c];
  }
}

template <typename T>
void BiasBackward(const BiasArgs& args, const T* dy, T* d_bias) {
  CheckNonNegative(args.rows, "rows");
  CheckNonNegative(args.cols, "cols");
  // Rows outer keeps the reads contiguous; each column still sums its rows
  // in index order.
  for (int64_t r = 0; r < args.rows; ++r) {
    const T* row = dy + r * args.cols;
    for (int64_t c = 0; c < args.cols; ++c) d_bias[c] += row[c];
  }
}

// ---------------------------------------------------------------------------
// RMSNorm

template <typename T>
void RmsNormForward(const RmsNormArgs& args, const T* x, const T* weight, T* y,
                    T* rstd) {
  CheckNonNegative(args.rows, "rows");
  ZR_CHECK_GT(args.dim, int64_t{0});
  ZR_CHECK_GE(args.eps, 0.0f);
  ZR_CHECK(std::isfinite(args.weight_offset));
  const T offset = static_cast<T>(args.weight_offset);
  for (int64_t r = 0; r < args.rows; ++r) {
    const T* xr = x + r * args.dim;
    T* yr = y + r * args.dim;
    double sum_sq = 0;
    for (int64_t i = 0; i < args.dim; ++i) {
      sum_sq += static_cast<double>(xr[i]) * static_cast<double>(xr[i]);
    }
    const T inv =
        static_cast<T>(1.0 / std::sqrt(sum_sq / static_cast<double>(args.dim) +
                                       static_cast<double>(args.eps)));
    rstd[r] = inv;
    for (int64_t i = 0; i < args.dim; ++i) {
      yr[i] = xr[i] * inv * (offset + weight[i]);
    }
  }
}

template <typename T>
void RmsNormBackward(const RmsNormArgs& args, const T* x, const T* weight,
                     const T* rstd, const T* dy, T* dx, T* d_weight) {
  CheckNonNegative(args.rows, "rows");
  ZR_CHECK_GT(args.dim, int64_t{0});
  const T offset = static_cast<T>(args.weight_offset);
  for (int64_t r = 0; r < args.rows; ++r) {
    const T* xr = x + r * args.dim;
    const T* dyr = dy + r * args.dim;
    T* dxr = dx + r * args.dim;
    const T inv = rstd[r];
    // First pass reads all of dy (dx may alias it): the projection of
    // g = dy * (offset + weight) on x, and the weight gradient.
    double dot = 0;
    for (int64_t i = 0; i < args.dim; ++i) {
      dot += static_cast<double>(dyr[i]) *
             static_cast<double>(offset + weight[i]) *
             static_cast<double>(xr[i]);
      d_weight[i] += dyr[i] * xr[i] * inv;
    }
    // d(rstd)/dx_i = -rstd^3 x_i / dim, hence the correction term.
    const T coeff = static_cast<T>(
        dot * static_cast<double>(inv) * static_cast<double>(inv) *
        static_cast<double>(inv) / static_cast<double>(args.dim));
    for (int64_t i = 0; i < args.dim; ++i) {
      dxr[i] = inv * dyr[i] * (offset + weight[i]) - coeff * xr[i];
    }
  }
}

// ---------------------------------------------------------------------------
// Rotary

template <typename T>
void RotaryForward(const RotaryArgs& args, const T* x, T* y,
                   const int32_t* positions) {
  Rotate(args, 1.0, x, y, positions);
}

template <typename T>
void RotaryBackward(const RotaryArgs& args, const T* dy, T* dx,
                    const int32_t* positions) {
  Rotate(args, -1.0, dy, dx, positions);
}

// ---------------------------------------------------------------------------
// Attention

// The first key query i of sequence b sees: its document's start, and no
// earlier than the sliding window allows.
int64_t FirstKey(const AttentionArgs& args, const int32_t* positions, int64_t b,
                 int64_t i) {
  int64_t first = i - PositionOf(positions, args.seq, b, i);
  if (args.window > 0) first = std::max(first, i - args.window + 1);
  return first;
}

template <typename T>
void AttentionForward(const AttentionArgs& args, const T* q, const T* k,
                      const T* v, T* out, T* lse, const int32_t* positions) {
  CheckAttentionArgs(args);
  ZR_CHECK(positions == nullptr || args.causal)
      << "document positions need causal attention";
  const int64_t S = args.seq, Hq = args.num_heads, Hkv = args.num_kv_heads,
                D = args.head_dim;
  const int64_t group = Hq / Hkv;
  const T scale = static_cast<T>(args.Scale());
  std::vector<T> scores(S);
  std::vector<double> acc(D);
  for (int64_t b = 0; b < args.batch; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t g = h / group;
      for (int64_t i = 0; i < S; ++i) {
        const T* qi = q + ((b * S + i) * Hq + h) * D;
        const int64_t num_keys = args.causal ? i + 1 : S;
        const int64_t first = FirstKey(args, positions, b, i);
        T max_score = -std::numeric_limits<T>::infinity();
        for (int64_t j = first; j < num_keys; ++j) {
          const T* kj = k + ((b * S + j) * Hkv + g) * D;
          scores[j] = Softcap(scale * Dot(qi, kj, D), args.softcap);
          max_score = std::max(max_score, scores[j]);
        }
        // Subtracting the max keeps every exp() <= 1: no overflow, and the
        // largest term is exactly 1 so the sum is >= 1 (log is safe).
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = first; j < num_keys; ++j) {
          const double p = std::exp(static_cast<double>(scores[j] - max_score));
          sum += p;
          const T* vj = v + ((b * S + j) * Hkv + g) * D;
          for (int64_t d = 0; d < D; ++d) acc[d] += p * vj[d];
        }
        T* oi = out + ((b * S + i) * Hq + h) * D;
        for (int64_t d = 0; d < D; ++d) oi[d] = static_cast<T>(acc[d] / sum);
        lse[(b * Hq + h) * S + i] =
            static_cast<T>(static_cast<double>(max_score) + std::log(sum));
      }
    }
  }
}

template <typename T>
void AttentionBackward(const AttentionArgs& args, const T* q, const T* k,
                       const T* v, const T* out, const T* lse, const T* d_out,
                       T* dq, T* dk, T* dv, const int32_t* positions) {
  CheckAttentionArgs(args);
  ZR_CHECK(positions == nullptr || args.causal)
      << "document positions need causal attention";
  const int64_t S = args.seq, Hq = args.num_heads, Hkv = args.num_kv_heads,
                D = args.head_dim;
  const int64_t group = Hq / Hkv;
  const T scale = static_cast<T>(args.Scale());
  const int64_t kv_size = args.batch * S * Hkv * D;
  std::fill_n(dk, kv_size, T(0));
  std::fill_n(dv, kv_size, T(0));
  for (int64_t b = 0; b < args.batch; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t g = h / group;
      for (int64_t i = 0; i < S; ++i) {
        const int64_t qi_offset = ((b * S + i) * Hq + h) * D;
        const T* qi = q + qi_offset;
        const T* doi = d_out + qi_offset;
        T* dqi = dq + qi_offset;
        std::fill_n(dqi, D, T(0));
        const T row_lse = lse[(b * Hq + h) * S + i];
        const T delta = Dot(doi, out + qi_offset, D);
        const int64_t num_keys = args.causal ? i + 1 : S;
        const int64_t first = FirstKey(args, positions, b, i);
        for (int64_t j = first; j < num_keys; ++j) {
          const int64_t kj_offset = ((b * S + j) * Hkv + g) * D;
          const T* kj = k + kj_offset;
          const T* vj = v + kj_offset;
          const T score = Softcap(scale * Dot(qi, kj, D), args.softcap);
          const T p = std::exp(score - row_lse);
          const T ds =
              p * (Dot(doi, vj, D) - delta) * SoftcapGrad(score, args.softcap);
          T* dkj = dk + kj_offset;
          T* dvj = dv + kj_offset;
          for (int64_t d = 0; d < D; ++d) {
            dvj[d] += p * doi[d];
            dqi[d] += scale * ds * kj[d];
            dkj[d] += scale * ds * qi[d];
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// SwiGLU

template <typename T>
void SwigluForward(const SwigluArgs& args, const T* gate, const T* up, T* h) {
  CheckNonNegative(args.n, "n");
  const bool gelu = args.activation == GluActivation::kGeluTanh;
  for (int64_t i = 0; i < args.n; ++i) {
    const T g = gate[i];
    h[i] = (gelu ? GeluTanh(g) : g * Sigmoid(g)) * up[i];
  }
}

template <typename T>
void SwigluBackward(const SwigluArgs& args, const T* gate, const T* up,
                    const T* dh, T* d_gate, T* d_up) {
  CheckNonNegative(args.n, "n");
  const bool gelu = args.activation == GluActivation::kGeluTanh;
  for (int64_t i = 0; i < args.n; ++i) {
    const T g = gate[i];
    const T grad = dh[i];
    const T u = up[i];
    if (gelu) {
      d_gate[i] = grad * u * GeluTanhGrad(g);
      d_up[i] = grad * GeluTanh(g);
      continue;
    }
    const T sig = Sigmoid(g);
    d_gate[i] = grad * u * sig * (T(1) + g * (T(1) - sig));
    d_up[i] = grad * g * sig;
  }
}

// ---------------------------------------------------------------------------
// Cross-entropy

template <typename T>
void CrossEntropyRowLosses(const CrossEntropyArgs& args, const T* logits,
                           const int32_t* targets, T* lse, double* row_loss) {
  CheckCrossEntropyArgs(args);
  CountTargets(args, targets);
  const int64_t V = args.vocab_size;
  const float cap = args.logit_softcap;
  std::vector<T> capped(V);
  for (int64_t t = 0; t < args.num_tokens; ++t) {
    const T* row = logits + t * V;
    for (int64_t v = 0; v < V; ++v) capped[v] = Softcap(row[v], cap);
    const double max_logit =
        static_cast<double>(*std::max_element(capped.begin(), capped.end()));
    double sum = 0;
    for (int64_t v = 0; v < V; ++v) {
      sum += std::exp(static_cast<double>(capped[v]) - max_logit);
    }
    const double row_lse = max_logit + std::log(sum);
    lse[t] = static_cast<T>(row_lse);
    const int32_t target = targets[args.row_offset + t];
    row_loss[t] = target == args.ignore_index
                      ? 0.0
                      : row_lse - static_cast<double>(capped[target]);
  }
}

double CrossEntropyMean(const CrossEntropyArgs& args, const int32_t* targets,
                        const double* row_loss) {
  CheckCrossEntropyArgs(args);
  const int64_t count = CountTargets(args, targets);
  double total = 0;
  for (int64_t t = 0; t < args.BatchTokens(); ++t) total += row_loss[t];
  return count == 0 ? 0.0 : total / args.Divisor(count);
}

template <typename T>
double CrossEntropyForward(const CrossEntropyArgs& args, const T* logits,
                           const int32_t* targets, T* lse) {
  ZR_CHECK(args.BatchTokens() == args.num_tokens && args.row_offset == 0)
      << "CrossEntropyForward takes a whole batch; chunks go through "
         "CrossEntropyRowLosses";
  std::vector<double> row_loss(args.num_tokens);
  CrossEntropyRowLosses(args, logits, targets, lse, row_loss.data());
  return CrossEntropyMean(args, targets, row_loss.data());
}

template <typename T>
void CrossEntropyBackward(const CrossEntropyArgs& args, const T* logits,
                          const int32_t* targets, const T* lse, T* d_logits) {
  CheckCrossEntropyArgs(args);
  const int64_t count = CountTargets(args, targets);
  const int64_t V = args.vocab_size;
  const T factor = count == 0
                       ? T(0)
                       : static_cast<T>(static_cast<double>(args.grad_scale) /
                                        args.Divisor(count));
  for (int64_t t = 0; t < args.num_tokens; ++t) {
    const T* row = logits + t * V;
    T* d_row = d_logits + t * V;
    const int32_t target = targets[args.row_offset + t];
    if (target == args.ignore_index || count == 0) {
      std::fill_n(d_row, V, T(0));
      continue;
    }
    const T row_lse = lse[t];
    for (int64_t v = 0; v < V; ++v) {
      const T z = Softcap(row[v], args.logit_softcap);
      const T p = std::exp(z - row_lse);
      d_row[v] = (p - (v == target ? T(1) : T(0))) * factor *
                 SoftcapGrad(z, args.logit_softcap);
    }
  }
}

// ---------------------------------------------------------------------------
// Elementwise

template <typename T>
void Accumulate(const AccumulateArgs& args, const T* x, T* y) {
  CheckNonNegative(args.n, "n");
  const T alpha = static_cast<T>(args.alpha);
  for (int64_t i = 0; i < args.n; ++i) y[i] += alpha * x[i];
}

template <typename T>
void Scale(const ScaleArgs& args, T* x) {
  CheckNonNegative(args.n, "n");
  const T alpha = static_cast<T>(args.alpha);
  for (int64_t i = 0; i < args.n; ++i) x[i] *= alpha;
}

template <typename T>
void Fill(const FillArgs& args, T* x) {
  CheckNonNegative(args.n, "n");
  std::fill_n(x, args.n, static_cast<T>(args.value));
}

template <typename T>
void Add(const AddArgs& args, const T* a, const T* b, T* out) {
  CheckNonNegative(args.n, "n");
  for (int64_t i = 0; i < args.n; ++i) out[i] = a[i] + b[i];
}

void Cast(const CastArgs& args, const void* src, void* dst) {
  CheckNonNegative(args.n, "n");
  if (args.src == args.dst) {
    if (src != dst) {
      std::memmove(dst, src, static_cast<size_t>(args.n * DTypeSize(args.src)));
    }
    return;
  }
  // Every conversion goes through float, which holds bf16 and fp16 exactly,
  // so bf16 <-> fp16 rounds once.
  for (int64_t i = 0; i < args.n; ++i) {
    StoreFromFloat(args.dst, LoadAsFloat(args.src, src, i), dst, i);
  }
}

void Accumulate(const AccumulateArgs& args, DType x_dtype, const void* x,
                DType y_dtype, void* y) {
  CheckNonNegative(args.n, "n");
  for (int64_t i = 0; i < args.n; ++i) {
    const float sum =
        LoadAsFloat(y_dtype, y, i) + args.alpha * LoadAsFloat(x_dtype, x, i);
    StoreFromFloat(y_dtype, sum, y, i);
  }
}

void Scale(const ScaleArgs& args, DType dtype, void* x) {
  CheckNonNegative(args.n, "n");
  for (int64_t i = 0; i < args.n; ++i) {
    StoreFromFloat(dtype, LoadAsFloat(dtype, x, i) * args.alpha, x, i);
  }
}

void Fill(const FillArgs& args, DType dtype, void* x) {
  CheckNonNegative(args.n, "n");
  for (int64_t i = 0; i < args.n; ++i) StoreFromFloat(dtype, args.value, x, i);
}

void Add(const AddArgs& args, DType dtype, const void* a, const void* b,
         void* out) {
  CheckNonNegative(args.n, "n");
  for (int64_t i = 0; i < args.n; ++i) {
    StoreFromFloat(dtype, LoadAsFloat(dtype, a, i) + LoadAsFloat(dtype, b, i),
                   out, i);
  }
}

// ---------------------------------------------------------------------------
// Reductions

template <typename T>
double SumSquares(const ReduceArgs& args, const T* x) {
  CheckNonNegative(args.n, "n");
  double sum = 0;
  for (int64_t i = 0; i < args.n; ++i) {
    const double value = static_cast<double>(x[i]);
    sum += value * value;
  }
  return sum;
}

double SumSquares(const ReduceArgs& args, DType dtype, const void* x) {
  CheckNonNegative(args.n, "n");
  double sum = 0;
  for (int64_t i = 0; i < args.n; ++i) {
    const double value = static_cast<double>(LoadAsFloat(dtype, x, i));
    sum += value * value;
  }
  return sum;
}

template <typename T>
bool AllFinite(const ReduceArgs& args, const T* x) {
  CheckNonNegative(args.n, "n");
  for (int64_t i = 0; i < args.n; ++i) {
    if (!std::isfinite(x[i])) return false;
  }
  return true;
}

bool AllFinite(const ReduceArgs& args, DType dtype, const void* x) {
  CheckNonNegative(args.n, "n");
  for (int64_t i = 0; i < args.n; ++i) {
    if (!std::isfinite(LoadAsFloat(dtype, x, i))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Optimizer

void AdamWStep(const AdamWArgs& args, float* params, const float* grads,
               float* exp_avg, float* exp_avg_sq) {
  CheckNonNegative(args.n, "n");
  ZR_CHECK_GE(args.step, int64_t{1}) << "AdamW steps count from 1";
  const AdamWStepScalars scalars = AdamWStepScalarsOf(args);
  const float step_size = scalars.step_size;
  const float w_decay = scalars.w_decay;
  const float bias_correction2 = scalars.bias_correction2;
  if (scalars.decoupled) {
    AdamWLoop<false, true>(args.n, params, grads, exp_avg, exp_avg_sq,
                           args.grad_scale, args.beta1, args.beta2, args.eps,
                           args.weight_decay, step_size, w_decay,
                           bias_correction2);
  } else if (scalars.l2) {
    AdamWLoop<true, false>(args.n, params, grads, exp_avg, exp_avg_sq,
                           args.grad_scale, args.beta1, args.beta2, args.eps,
                           args.weight_decay, step_size, w_decay,
                           bias_correction2);
  } else {
    AdamWLoop<false, false>(args.n, params, grads, exp_avg, exp_avg_sq,
                            args.grad_scale, args.beta1, args.beta2, args.eps,
                            args.weight_decay, step_size, w_decay,
                            bias_correction2);
  }
}

void AdamWStep(const AdamWArgs& args, DType params_dtype, void* params,
               const float* grads, DType moments_dtype, void* exp_avg,
               void* exp_avg_sq) {
  CheckNonNegative(args.n, "n");
  const int64_t n = args.n;
  // fp32 copies of what is bf16, stepped, then rounded back.
  auto widen = [n](DType dtype, void* data, std::vector<float>& copy) {
    if (dtype == DType::kF32) return static_cast<float*>(data);
    ZR_CHECK(dtype == DType::kBF16) << "AdamW keeps fp32 or bf16 state";
    copy.resize(n);
    BF16ToFloat(absl::MakeConstSpan(static_cast<const uint16_t*>(data), n),
                absl::MakeSpan(copy));
    return copy.data();
  };
  std::vector<float> p, m, v;
  float* pf = widen(params_dtype, params, p);
  float* mf = widen(moments_dtype, exp_avg, m);
  float* vf = widen(moments_dtype, exp_avg_sq, v);
  AdamWStep(args, pf, grads, mf, vf);
  auto narrow = [n](DType dtype, const std::vector<float>& copy, void* data) {
    if (dtype == DType::kF32) return;
    FloatToBF16(absl::MakeConstSpan(copy),
                absl::MakeSpan(static_cast<uint16_t*>(data), n));
  };
  narrow(params_dtype, p, params);
  narrow(moments_dtype, m, exp_avg);
  narrow(moments_dtype, v, exp_avg_sq);
}

// ---------------------------------------------------------------------------
// Explicit instantiations: float for the simulator and trainer, double for
// precise tests.

#define ZR_INSTANTIATE_REFERENCE_KERNELS(T)                                    \
  template void EmbeddingForward<T>(const EmbeddingArgs&, const int32_t*,      \
                                    const T*, T*);                             \
  template void EmbeddingBackward<T>(const EmbeddingArgs&, const int32_t*,     \
                                     const T*, T*);                            \
  template void Matmul<T>(const MatmulArgs&, const T*, const T*, T*);          \
  template void BiasAdd<T>(const BiasArgs&, const T*, T*);                     \
  template void BiasBackward<T>(const BiasArgs&, const T*, T*);                \
  template void RmsNormForward<T>(const RmsNormArgs&, const T*, const T*, T*,  \
                                  T*);                                         \
  template void RmsNormBackward<T>(const RmsNormArgs&, const T*, const T*,     \
                                   const T*, const T*, T*, T*);                \
  template void RotaryForward<T>(const RotaryArgs&, const T*, T*,              \
                                 const int32_t*);                              \
  template void RotaryBackward<T>(const RotaryArgs&, const T*, T*,             \
                                  const int32_t*);                             \
  template void AttentionForward<T>(const AttentionArgs&, const T*, const T*,  \
                                    const T*, T*, T*, const int32_t*);         \
  template void AttentionBackward<T>(const AttentionArgs&, const T*, const T*, \
                                     const T*, const T*, const T*, const T*,   \
                                     T*, T*, T*, const int32_t*);              \
  template void SwigluForward<T>(const SwigluArgs&, const T*, const T*, T*);   \
  template void SwigluBackward<T>(const SwigluArgs&, const T*, const T*,       \
                                  const T*, T*, T*);                           \
  template void CrossEntropyRowLosses<T>(const CrossEntropyArgs&, const T*,    \
                                         const int32_t*, T*, double*);         \
  template double CrossEntropyForward<T>(const CrossEntropyArgs&, const T*,    \
                                         const int32_t*, T*);                  \
  template void CrossEntropyBackward<T>(const CrossEntropyArgs&, const T*,     \
                                        const int32_t*, const T*, T*);         \
  template void Accumulate<T>(const AccumulateArgs&, const T*, T*);            \
  template void Scale<T>(const ScaleArgs&, T*);                                \
  template void Fill<T>(const FillArgs&, T*);                                  \
  template void Add<T>(const AddArgs&, const T*, const T*, T*);                \
  template double SumSquares<T>(const ReduceArgs&, const T*);                  \
  template bool AllFinite<T>(const ReduceArgs&, const T*);

ZR_INSTANTIATE_REFERENCE_KERNELS(float)
ZR_INSTANTIATE_REFERENCE_KERNELS(double)

#undef ZR_INSTANTIATE_REFERENCE_KERNELS

}  // namespace kernels
}  // namespace zero3
