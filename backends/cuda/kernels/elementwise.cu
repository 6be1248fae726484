// Copyright 2026 The zero3 Authors.
//
// Elementwise kernels: cast, accumulate, scale, fill, add, the gated
// activations (SwiGLU, GeGLU) forward and backward, bias add and the AdamW
// step.
//
// One grid-stride kernel template runs every op. Each op is a functor whose
// Apply<N>(i) handles elements [i, i + N); with every operand of a
// compile-time dtype and 16-byte aligned, N = 8 (16-byte loads and stores),
// else N = 1. The arithmetic uses the round-to-nearest intrinsics
// (__fmul_rn, __fadd_rn, ...) where the compiler could otherwise fuse a
// multiply and an add into an FMA: the CPU reference is compiled with
// -ffp-contract=off, and these ops then match it bit for bit (SwiGLU and
// GeGLU up to the last-place differences of expf and tanhf).

#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "backends/cuda/kernels/device_ops.h"
#include "backends/cuda/kernels/device_util.h"

namespace zero3 {
namespace cuda {
namespace internal {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;

template <int N, typename F>
__global__ void __launch_bounds__(kThreads) ElementwiseKernel(F f, int64_t n) {
  const int64_t chunks = n / N;
  for (int64_t c = GlobalThread(); c < chunks; c += GridStride()) {
    f.template Apply<N>(c * N);
  }
  if constexpr (N > 1) {
    for (int64_t i = chunks * N + GlobalThread(); i < n; i += GridStride()) {
      f.template Apply<1>(i);
    }
  }
}

template <typename F>
cudaError_t Run(const Env& env, int64_t n, const F& f, bool vectorize) {
  if (n <= 0) return cudaSuccess;
  if (vectorize) {
    const int64_t chunks = n / kVec > 0 ? n / kVec : 1;
    ElementwiseKernel<kVec>
        <<<GridFor(chunks, kThreads, env.sm_count), kThreads, 0, env.stream>>>(
            f, n);
  } else {
    ElementwiseKernel<1>
        <<<GridFor(n, kThreads, env.sm_count), kThreads, 0, env.stream>>>(f, n);
  }
  return cudaGetLastError();
}

// True when every accessor type allows vector access and every pointer is
// 16-byte aligned.
template <typename... A>
bool CanVectorize(const A&... accessors) {
  return (A::kVectorizable && ...) && (Aligned16(accessors.p) && ...);
}

__device__ __forceinline__ float Sigmoid(float g) {
  // expf(-g) overflows to inf for very negative g, giving exactly 0.
  return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-g)));
}

// GELU's tanh approximation (PyTorch's gelu(approximate="tanh")): the
// constants and the float operations of the reference's GeluTanh and
// GeluTanhGrad, in their order.
constexpr float kGeluC = static_cast<float>(0.7978845608028654);  // sqrt(2/pi)
constexpr float kGeluA = static_cast<float>(0.044715);
constexpr float kGelu3A = static_cast<float>(3 * 0.044715);

// tanh(sqrt(2 / pi) * (g + 0.044715 g^3)).
__device__ __forceinline__ float GeluTanhT(float g) {
  const float cube = __fmul_rn(__fmul_rn(__fmul_rn(kGeluA, g), g), g);
  return tanhf(__fmul_rn(kGeluC, __fadd_rn(g, cube)));
}

// 0.5 g (1 + t) for t = GeluTanhT(g).
__device__ __forceinline__ float GeluTanh(float g, float t) {
  return __fmul_rn(__fmul_rn(0.5f, g), __fadd_rn(1.0f, t));
}

// 0.5 (1 + t) + 0.5 g (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715 g^2) for
// t = GeluTanhT(g).
__device__ __forceinline__ float GeluTanhGrad(float g, float t) {
  const float left = __fmul_rn(0.5f, __fadd_rn(1.0f, t));
  const float right = __fmul_rn(
      __fmul_rn(__fmul_rn(__fmul_rn(0.5f, g), __fsub_rn(1.0f, __fmul_rn(t, t))),
                kGeluC),
      __fadd_rn(1.0f, __fmul_rn(__fmul_rn(kGelu3A, g), g)));
  return __fadd_rn(left, right);
}

// ---------------------------------------------------------------------------
// Functors.

template <typename S, typename D>
struct CastOp {
  S src;
  D dst;
  template <int N>
  __device__ __forceinline__ void Apply(int64_t i) const {
    float v[N];
    src.template Load<N>(i, v);
    dst.template Store<N>(i, v);
  }
};

template <typename X, typename Y>
struct AccumulateOp {
  X x;
  Y y;
  float alpha;
  template <int N>
  __device__ __forceinline__ void Apply(int64_t i) const {
    float a[N], b[N];
    x.template Load<N>(i, a);
    y.template Load<N>(i, b);
#pragma unroll
    for (int j = 0; j < N; ++j) b[j] = __fadd_rn(b[j], __fmul_rn(alpha, a[j]));
    y.template Store<N>(i, b);
  }
};

template <typename X>
struct ScaleOp {
  X x;
  float alpha;
  template <int N>
  __device__ __forceinline__ void Apply(int64_t i) const {
    float a[N];
    x.template Load<N>(i, a);
#pragma unroll
    for (int j = 0; j < N; ++j) a[j] = __fmul_rn(a[j], alpha);
    x.template Store<N>(i, a);
  }
};

template <typename X>
struct FillOp {
  X x;
  float value;
  template <int N>
  __device__ __forceinline__ void Apply(int64_t i) const {
    float a[N];
#pragma unroll
    for (int j = 0; j < N; ++j) a[j] = value;
    x.template Store<N>(i, a);
  }
};

template <typename A, typename B, typename O>
struct AddOp {
  A a;
  B b;
  O out;
  template <int N>
  __device__ __forceinline__ void Apply(int64_t i) const {
    float x[N], y[N];
    a.template Load<N>(i, x);
    b.template Load<N>(i, y);
#pragma unroll
    for (int j = 0; j < N; ++j) x[j] = __fadd_rn(x[j], y[j]);
    out.template Store<N>(i, x);
  }
};

// h = act(gate) * up; act is silu, or GELU's tanh approximation where
// kGelu.
template <bool kGelu, typename G, typename U, typename H>
struct SwigluForwardOp {
  G gate;
  U up;
  H h;
  template <int N>
  __device__ __forceinline__ void Apply(int64_t i) const {
    float g[N], u[N];
    gate.template Load<N>(i, g);
    up.template Load<N>(i, u);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if constexpr (kGelu) {
        g[j] = __fmul_rn(GeluTanh(g[j], GeluTanhT(g[j])), u[j]);
      } else {
        // (g * sigmoid(g)) * up, in the reference's order.
        g[j] = __fmul_rn(__fmul_rn(g[j], Sigmoid(g[j])), u[j]);
      }
    }
    h.template Store<N>(i, g);
  }
};

template <bool kGelu, typename G, typename U, typename DH, typename DG,
          typename DU>
struct SwigluBackwardOp {
  G gate;
  U up;
  DH dh;
  DG d_gate;
  DU d_up;
  template <int N>
  __device__ __forceinline__ void Apply(int64_t i) const {
    float g[N], u[N], d[N], dg[N], du[N];
    gate.template Load<N>(i, g);
    up.template Load<N>(i, u);
    dh.template Load<N>(i, d);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if constexpr (kGelu) {
        // dh * up * gelu'(g) and dh * gelu(g).
        const float t = GeluTanhT(g[j]);
        dg[j] = __fmul_rn(__fmul_rn(d[j], u[j]), GeluTanhGrad(g[j], t));
        du[j] = __fmul_rn(d[j], GeluTanh(g[j], t));
        continue;
      }
      const float sig = Sigmoid(g[j]);
      const float silu = __fmul_rn(g[j], sig);
      // dh * up * sig * (1 + g * (1 - sig)), left to right.
      const float inner =
          __fadd_rn(1.0f, __fmul_rn(g[j], __fsub_rn(1.0f, sig)));
      dg[j] = __fmul_rn(__fmul_rn(__fmul_rn(d[j], u[j]), sig), inner);
      du[j] = __fmul_rn(d[j], silu);
    }
    d_gate.template Store<N>(i, dg);
    d_up.template Store<N>(i, du);
  }
};

template <typename B, typename X>
struct BiasAddOp {
  B bias;
  X x;
  uint64_t cols;
  // With N > 1, cols is a multiple of N, so a chunk never crosses a row.
  template <int N>
  __device__ __forceinline__ void Apply(int64_t i) const {
    const int64_t c = static_cast<int64_t>(static_cast<uint64_t>(i) % cols);
    float a[N];
    x.template Load<N>(i, a);
#pragma unroll
    for (int j = 0; j < N; ++j) a[j] = __fadd_rn(a[j], bias.Load(c + j));
    x.template Store<N>(i, a);
  }
};

// DeepSpeed cpu_adam's Step_1 loop body, operation for operation, over
// params of tag P and moments of tag M (F32 or BF16: widened as loaded,
// rounded to nearest even as stored, as the host's AdamW does).
template <bool kL2, bool kDecoupled, typename P = F32, typename M = F32>
struct AdamWOp {
  Typed<P> params;
  Typed<F32> grads;
  Typed<M> exp_avg, exp_avg_sq;
  AdamWScalars s;
  template <int N>
  __device__ __forceinline__ void Apply(int64_t i) const {
    float p[N], g[N], m[N], v[N];
    params.template Load<N>(i, p);
    grads.template Load<N>(i, g);
    exp_avg.template Load<N>(i, m);
    exp_avg_sq.template Load<N>(i, v);
    const float beta1_minus1 = 1.0f - s.beta1;
    const float beta2_minus1 = 1.0f - s.beta2;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      float grad = __fmul_rn(g[j], s.grad_scale);
      float param = p[j];
      if (kL2) grad = __fadd_rn(__fmul_rn(param, s.weight_decay), grad);
      float momentum = __fmul_rn(m[j], s.beta1);
      momentum = __fadd_rn(__fmul_rn(grad, beta1_minus1), momentum);
      float variance = __fmul_rn(v[j], s.beta2);
      grad = __fmul_rn(grad, grad);
      variance = __fadd_rn(__fmul_rn(grad, beta2_minus1), variance);
      float denom = __fsqrt_rn(variance);
      denom = __fadd_rn(__fmul_rn(denom, s.bias_correction2), s.eps);
      const float update = __fdiv_rn(momentum, denom);
      if (kDecoupled) param = __fadd_rn(param, __fmul_rn(s.w_decay, param));
      param = __fadd_rn(__fmul_rn(update, s.step_size), param);
      p[j] = param;
      m[j] = momentum;
      v[j] = variance;
    }
    params.template Store<N>(i, p);
    exp_avg.template Store<N>(i, m);
    exp_avg_sq.template Store<N>(i, v);
  }
};

bool AllSame(std::initializer_list<Tensor> tensors) {
  const DT first = tensors.begin()->dtype;
  for (const Tensor& t : tensors) {
    if (t.dtype != first) return false;
  }
  return true;
}

// Calls f(std::bool_constant<kGelu>) for the activation.
template <typename F>
cudaError_t DispatchGlu(Glu act, F&& f) {
  if (act == Glu::kGeluTanh) return f(std::true_type());
  return f(std::false_type());
}

}  // namespace

cudaError_t LaunchCast(const Env& env, int64_t n, Tensor src, Tensor dst) {
  return DispatchDType(src.dtype, [&](auto s_tag) {
    return DispatchDType(dst.dtype, [&](auto d_tag) {
      using S = Typed<decltype(s_tag)>;
      using D = Typed<decltype(d_tag)>;
      const CastOp<S, D> op{S(src), D(dst)};
      return Run(env, n, op, CanVectorize(op.src, op.dst));
    });
  });
}

cudaError_t LaunchAccumulate(const Env& env, int64_t n, float alpha, Tensor x,
                             Tensor y) {
  return DispatchDType(x.dtype, [&](auto x_tag) {
    return DispatchDType(y.dtype, [&](auto y_tag) {
      using X = Typed<decltype(x_tag)>;
      using Y = Typed<decltype(y_tag)>;
      const AccumulateOp<X, Y> op{X(x), Y(y), alpha};
      return Run(env, n, op, CanVectorize(op.x, op.y));
    });
  });
}

cudaError_t LaunchScale(const Env& env, int64_t n, float alpha, Tensor x) {
  return DispatchDType(x.dtype, [&](auto tag) {
    using X = Typed<decltype(tag)>;
    const ScaleOp<X> op{X(x), alpha};
    return Run(env, n, op, CanVectorize(op.x));
  });
}

cudaError_t LaunchFill(const Env& env, int64_t n, float value, Tensor x) {
  return DispatchDType(x.dtype, [&](auto tag) {
    using X = Typed<decltype(tag)>;
    const FillOp<X> op{X(x), value};
    return Run(env, n, op, CanVectorize(op.x));
  });
}

cudaError_t LaunchAdd(const Env& env, int64_t n, Tensor a, Tensor b,
                      Tensor out) {
  if (AllSame({a, b, out})) {
    return DispatchDType(out.dtype, [&](auto tag) {
      using T = Typed<decltype(tag)>;
      const AddOp<T, T, T> op{T(a), T(b), T(out)};
      return Run(env, n, op, CanVectorize(op.a, op.b, op.out));
    });
  }
  const AddOp<Dyn, Dyn, Dyn> op{Dyn(a), Dyn(b), Dyn(out)};
  return Run(env, n, op, false);
}

cudaError_t LaunchSwigluForward(const Env& env, int64_t n, Glu act, Tensor gate,
                                Tensor up, Tensor h) {
  return DispatchGlu(act, [&](auto gelu) {
    constexpr bool kGelu = decltype(gelu)::value;
    if (AllSame({gate, up, h})) {
      return DispatchDType(h.dtype, [&](auto tag) {
        using T = Typed<decltype(tag)>;
        const SwigluForwardOp<kGelu, T, T, T> op{T(gate), T(up), T(h)};
        return Run(env, n, op, CanVectorize(op.gate, op.up, op.h));
      });
    }
    const SwigluForwardOp<kGelu, Dyn, Dyn, Dyn> op{Dyn(gate), Dyn(up), Dyn(h)};
    return Run(env, n, op, false);
  });
}

cudaError_t LaunchSwigluBackward(const Env& env, int64_t n, Glu act,
                                 Tensor gate, Tensor up, Tensor dh,
                                 Tensor d_gate, Tensor d_up) {
  return DispatchGlu(act, [&](auto gelu) {
    constexpr bool kGelu = decltype(gelu)::value;
    if (AllSame({gate, up, dh, d_gate, d_up})) {
      return DispatchDType(gate.dtype, [&](auto tag) {
        using T = Typed<decltype(tag)>;
        const SwigluBackwardOp<kGelu, T, T, T, T, T> op{T(gate), T(up), T(dh),
                                                        T(d_gate), T(d_up)};
        return Run(env, n, op,
                   CanVectorize(op.gate, op.up, op.dh, op.d_gate, op.d_up));
      });
    }
    const SwigluBackwardOp<kGelu, Dyn, Dyn, Dyn, Dyn, Dyn> op{
        Dyn(gate), Dyn(up), Dyn(dh), Dyn(d_gate), Dyn(d_up)};
    return Run(env, n, op, false);
  });
}

cudaError_t LaunchBiasAdd(const Env& env, int64_t rows, int64_t cols,
                          Tensor bias, Tensor x) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const int64_t n = rows * cols;
  if (AllSame({bias, x})) {
    return DispatchDType(x.dtype, [&](auto tag) {
      using T = Typed<decltype(tag)>;
      const BiasAddOp<T, T> op{T(bias), T(x), static_cast<uint64_t>(cols)};
      return Run(env, n, op, cols % kVec == 0 && CanVectorize(op.x));
    });
  }
  const BiasAddOp<Dyn, Dyn> op{Dyn(bias), Dyn(x), static_cast<uint64_t>(cols)};
  return Run(env, n, op, false);
}

cudaError_t LaunchAdamW(const Env& env, int64_t n, const AdamWScalars& s,
                        Tensor params, const float* grads, Tensor exp_avg,
                        Tensor exp_avg_sq) {
  auto typed = [&](auto p_tag, auto m_tag) {
    using P = decltype(p_tag);
    using M = decltype(m_tag);
    auto run = [&](auto op) {
      op.params = Typed<P>(params);
      op.grads = Typed<F32>(Tensor{const_cast<float*>(grads), DT::kF32});
      op.exp_avg = Typed<M>(exp_avg);
      op.exp_avg_sq = Typed<M>(exp_avg_sq);
      op.s = s;
      return Run(env, n, op,
                 CanVectorize(op.params, op.grads, op.exp_avg, op.exp_avg_sq));
    };
    const Typed<P> p(Tensor{});
    const Typed<F32> g(Tensor{});
    const Typed<M> m(Tensor{});
    if (s.decoupled) return run(AdamWOp<false, true, P, M>{p, g, m, m, s});
    if (s.l2) return run(AdamWOp<true, false, P, M>{p, g, m, m, s});
    return run(AdamWOp<false, false, P, M>{p, g, m, m, s});
  };
  // The checks allow fp32 and bf16 states only.
  return DispatchDType(params.dtype, [&](auto p_tag) {
    return DispatchDType(exp_avg.dtype,
                         [&](auto m_tag) { return typed(p_tag, m_tag); });
  });
}

}  // namespace internal
}  // namespace cuda
}  // namespace zero3
