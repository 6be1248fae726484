// Copyright 2026 The zero3 Authors.

#include "backends/cuda/kernels/launch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernels/device_ops.h"
#include "backends/cuda/kernels/matmul.h"
#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"
#include "core/runtime/kernel_call_checks.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cuda {
namespace {

namespace ops = runtime::ops;
namespace k = kernels;
using internal::DT;
using runtime::BufferSlice;
using runtime::KernelCall;
using runtime::TensorRef;

template <class>
inline constexpr bool kAlwaysFalse = false;

// Grid dimensions y and z are limited to 65535 blocks.
constexpr int64_t kMaxGridY = 65535;

DT ToDT(k::DType dtype) {
  static_assert(
      static_cast<int>(k::DType::kF32) == static_cast<int>(DT::kF32) &&
          static_cast<int>(k::DType::kBF16) == static_cast<int>(DT::kBF16) &&
          static_cast<int>(k::DType::kF16) == static_cast<int>(DT::kF16),
      "DT mirrors kernels::DType");
  return static_cast<DT>(static_cast<int>(dtype));
}

internal::Tensor Dev(const TensorRef& t) {
  return internal::Tensor{t.slice.data(), ToDT(t.dtype)};
}

internal::RotaryFrequencies RotaryFrequenciesOf(const k::RotaryArgs& a) {
  static_assert(sizeof(internal::RotaryFrequencies::inv_freq) ==
                    sizeof(k::RotaryArgs::inv_freq),
                "the launcher's table mirrors RotaryArgs'");
  internal::RotaryFrequencies f;
  f.rotary_dim = a.RotaryDim();
  f.theta = a.theta;
  f.attention_scaling = a.attention_scaling;
  f.has_inv_freq = a.has_inv_freq;
  std::copy(std::begin(a.inv_freq), std::end(a.inv_freq), f.inv_freq);
  return f;
}

// A slice's int32 values on the device, or null where it is empty.
const int32_t* PositionsOf(const BufferSlice& positions) {
  return positions.bytes() > 0 ? positions.As<int32_t>() : nullptr;
}

internal::AttentionShape ShapeOf(const k::AttentionArgs& a,
                                 const BufferSlice& positions = {}) {
  internal::AttentionShape s;
  s.positions = PositionsOf(positions);
  s.batch = a.batch;
  s.seq = a.seq;
  s.num_heads = a.num_heads;
  s.num_kv_heads = a.num_kv_heads;
  s.head_dim = a.head_dim;
  s.causal = a.causal;
  s.window = a.window;
  s.scale = a.scale;
  s.softcap = a.softcap;
  return s;
}

// The launchers' name of an op's gated activation.
internal::Glu GluOf(k::GluActivation activation) {
  static_assert(static_cast<int>(k::GluActivation::kSilu) ==
                        static_cast<int>(internal::Glu::kSilu) &&
                    static_cast<int>(k::GluActivation::kGeluTanh) ==
                        static_cast<int>(internal::Glu::kGeluTanh),
                "Glu mirrors kernels::GluActivation");
  return static_cast<internal::Glu>(static_cast<int>(activation));
}

// True when the tensor-core attention kernels run this call.
bool UseFlash(const KernelContext& ctx, const k::AttentionArgs& a,
              std::initializer_list<TensorRef> tensors) {
  if (ctx.attention() != AttentionKernels::kAuto) return false;
  internal::Tensor list[8];
  int count = 0;
  for (const TensorRef& t : tensors) list[count++] = Dev(t);
  return internal::FlashAttentionSupports(ShapeOf(a), list, count);
}

// Scratch bytes of a call; 0 for shapes that cannot be valid.
int64_t ScratchFor(const runtime::Op& op) {
  const int64_t bytes = std::visit(
      [](const auto& o) -> int64_t {
        using T = std::decay_t<decltype(o)>;
        const auto& a = o.args;
        if constexpr (std::is_same_v<T, ops::SumSquares>) {
          return internal::SumSquaresScratchBytes(a.n);
        } else if constexpr (std::is_same_v<T, ops::BiasBackward>) {
          return internal::BiasBackwardScratchBytes(a.rows, a.cols);
        } else if constexpr (std::is_same_v<T, ops::RmsNormBackward>) {
          return internal::RmsNormBackwardScratchBytes(a.rows, a.dim);
        } else if constexpr (std::is_same_v<T, ops::EmbeddingBackward>) {
          if (a.num_tokens > std::numeric_limits<int32_t>::max() ||
              a.vocab_size < 0) {
            return 0;
          }
          return internal::EmbeddingBackwardScratchBytes(a.num_tokens,
                                                         a.vocab_size);
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyForward>) {
          if (o.row_loss.bytes() > 0) return 0;
          return internal::CrossEntropyForwardScratchBytes(a.num_tokens);
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyBackward>) {
          return internal::CrossEntropyBackwardScratchBytes();
        } else if constexpr (std::is_same_v<T, ops::AttentionBackward>) {
          return internal::AttentionBackwardScratchBytes(ShapeOf(a));
        } else {
          return 0;
        }
      },
      op);
  return bytes > 0 ? bytes : 0;
}

// Validates a call: the checks of every backend
// (core/runtime/kernel_call_checks.h), then this backend's limits.
absl::Status Validate(const KernelCall& call) {
  ZR_RETURN_IF_ERROR(runtime::CheckKernelCall(call, /*need_data=*/true));
  runtime::KernelCallChecker c(call, /*need_data=*/true);
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        const auto& a = o.args;
        if constexpr (std::is_same_v<T, ops::EmbeddingForward> ||
                      std::is_same_v<T, ops::EmbeddingBackward>) {
          if (a.num_tokens > std::numeric_limits<int32_t>::max()) {
            c.Unsupported("more than 2^31 - 1 tokens");
          }
        } else if constexpr (std::is_same_v<T, ops::Matmul>) {
          if (a.m > 0 && a.n > 0 && a.k > 0 &&
              !internal::MatmulRunner::Supports(o.a.dtype, o.b.dtype,
                                                o.c.dtype)) {
            c.Unsupported(absl::StrCat(
                "a ", k::DTypeName(o.a.dtype), " x b ", k::DTypeName(o.b.dtype),
                " -> c ", k::DTypeName(o.c.dtype),
                ": cuBLAS takes a and b of one type and c of that type or "
                "f32"));
          }
        } else if constexpr (std::is_same_v<T, ops::RmsNormForward> ||
                             std::is_same_v<T, ops::RmsNormBackward>) {
          if (a.rows > 0 && (a.dim + 7) / 8 > int64_t{1} << 30) {
            c.Unsupported("dim too large");
          }
        } else if constexpr (std::is_same_v<T, ops::AttentionForward> ||
                             std::is_same_v<T, ops::AttentionBackward>) {
          if (a.batch * a.num_heads > kMaxGridY) {
            c.Unsupported(
                absl::StrCat("batch * num_heads = ", a.batch * a.num_heads,
                             " exceeds ", kMaxGridY));
          }
        } else if constexpr (std::is_same_v<T, ops::Cast>) {
          if (a.src == a.dst && a.n > 0 &&
              o.src.slice.data() != o.dst.slice.data()) {
            const int64_t bytes = a.n * k::DTypeSize(a.src);
            const char* s = static_cast<const char*>(o.src.slice.data());
            const char* d = static_cast<const char*>(o.dst.slice.data());
            if (s < d + bytes && d < s + bytes) {
              c.Unsupported("a copy between overlapping ranges");
            }
          }
        }
      },
      call.op);
  return c.status();
}

// The kernel's scalars: kernels::AdamWStepScalarsOf's, and the args'.
internal::AdamWScalars AdamWScalarsOf(const k::AdamWArgs& args) {
  const k::AdamWStepScalars step = k::AdamWStepScalarsOf(args);
  internal::AdamWScalars s;
  s.beta1 = args.beta1;
  s.beta2 = args.beta2;
  s.eps = args.eps;
  s.weight_decay = args.weight_decay;
  s.step_size = step.step_size;
  s.w_decay = step.w_decay;
  s.bias_correction2 = step.bias_correction2;
  s.grad_scale = args.grad_scale;
  s.decoupled = step.decoupled;
  s.l2 = step.l2;
  return s;
}

// Enqueues the kernels of a validated call on env.stream, whose cuBLAS
// workspace is `cublas_workspace`. Errors name the call.
absl::Status Enqueue(const KernelCall& call, const KernelContext& ctx,
                     const internal::Env& env, internal::MatmulRunner& matmul,
                     void* cublas_workspace) {
  cudaError_t err = cudaSuccess;
  absl::Status status;
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        const auto& a = o.args;
        if constexpr (std::is_same_v<T, ops::EmbeddingForward>) {
          err = internal::LaunchEmbeddingForward(
              env, a.num_tokens, a.vocab_size, a.dim,
              o.tokens.template As<int32_t>(), Dev(o.table), Dev(o.out));
        } else if constexpr (std::is_same_v<T, ops::EmbeddingBackward>) {
          err = internal::LaunchEmbeddingBackward(
              env, a.num_tokens, a.vocab_size, a.dim,
              o.tokens.template As<int32_t>(), Dev(o.d_out), Dev(o.d_table));
        } else if constexpr (std::is_same_v<T, ops::Matmul>) {
          if (a.m == 0 || a.n == 0) return;
          if (a.k == 0) {
            // An empty sum: C = beta C (or zero, ignoring C, when beta == 0).
            err = a.beta == 0.0f
                      ? internal::LaunchFill(env, a.m * a.n, 0.0f, Dev(o.c))
                      : internal::LaunchScale(env, a.m * a.n, a.beta, Dev(o.c));
            return;
          }
          status = matmul.Run(a, o.a.dtype, o.a.slice.data(), o.b.dtype,
                              o.b.slice.data(), o.c.dtype, o.c.slice.data(),
                              env.stream, cublas_workspace);
        } else if constexpr (std::is_same_v<T, ops::BiasAdd>) {
          err = internal::LaunchBiasAdd(env, a.rows, a.cols, Dev(o.bias),
                                        Dev(o.x));
        } else if constexpr (std::is_same_v<T, ops::BiasBackward>) {
          err = internal::LaunchBiasBackward(env, a.rows, a.cols, Dev(o.dy),
                                             Dev(o.d_bias));
        } else if constexpr (std::is_same_v<T, ops::RmsNormForward>) {
          err = internal::LaunchRmsNormForward(
              env, a.rows, a.dim, a.eps, a.weight_offset, Dev(o.x),
              Dev(o.weight), Dev(o.y), Dev(o.rstd));
        } else if constexpr (std::is_same_v<T, ops::RmsNormBackward>) {
          err = internal::LaunchRmsNormBackward(
              env, a.rows, a.dim, a.weight_offset, Dev(o.x), Dev(o.weight),
              Dev(o.rstd), Dev(o.dy), Dev(o.dx), Dev(o.d_weight));
        } else if constexpr (std::is_same_v<T, ops::RotaryForward>) {
          err = internal::LaunchRotary(env, a.batch, a.seq, a.heads, a.head_dim,
                                       RotaryFrequenciesOf(a), false, Dev(o.x),
                                       Dev(o.y), PositionsOf(o.positions));
        } else if constexpr (std::is_same_v<T, ops::RotaryBackward>) {
          err = internal::LaunchRotary(env, a.batch, a.seq, a.heads, a.head_dim,
                                       RotaryFrequenciesOf(a), true, Dev(o.dy),
                                       Dev(o.dx), PositionsOf(o.positions));
        } else if constexpr (std::is_same_v<T, ops::AttentionForward>) {
          const internal::AttentionShape shape = ShapeOf(a, o.positions);
          if (UseFlash(ctx, a, {o.q, o.k, o.v, o.out})) {
            err = internal::LaunchFlashAttentionForward(env, shape, Dev(o.q),
                                                        Dev(o.k), Dev(o.v),
                                                        Dev(o.out), Dev(o.lse));
          } else if (a.head_dim > internal::kMaxSimpleAttentionHeadDim) {
            status = absl::UnimplementedError(
                absl::StrCat("head_dim ", a.head_dim, " above ",
                             internal::kMaxSimpleAttentionHeadDim,
                             " needs the tensor-core kernels"));
          } else {
            err = internal::LaunchAttentionForwardSimple(
                env, shape, Dev(o.q), Dev(o.k), Dev(o.v), Dev(o.out),
                Dev(o.lse));
          }
        } else if constexpr (std::is_same_v<T, ops::AttentionBackward>) {
          const internal::AttentionShape shape = ShapeOf(a, o.positions);
          if (UseFlash(ctx, a,
                       {o.q, o.k, o.v, o.out, o.d_out, o.dq, o.dk, o.dv})) {
            err = internal::LaunchFlashAttentionBackward(
                env, shape, Dev(o.q), Dev(o.k), Dev(o.v), Dev(o.out),
                Dev(o.lse), Dev(o.d_out), Dev(o.dq), Dev(o.dk), Dev(o.dv));
          } else if (a.head_dim > internal::kMaxSimpleAttentionHeadDim) {
            status = absl::UnimplementedError(
                absl::StrCat("head_dim ", a.head_dim, " above ",
                             internal::kMaxSimpleAttentionHeadDim,
                             " needs the tensor-core kernels"));
          } else {
            err = internal::LaunchAttentionBackwardSimple(
                env, shape, Dev(o.q), Dev(o.k), Dev(o.v), Dev(o.out),
                Dev(o.lse), Dev(o.d_out), Dev(o.dq), Dev(o.dk), Dev(o.dv));
          }
        } else if constexpr (std::is_same_v<T, ops::SwigluForward>) {
          err = internal::LaunchSwigluForward(env, a.n, GluOf(a.activation),
                                              Dev(o.gate), Dev(o.up), Dev(o.h));
        } else if constexpr (std::is_same_v<T, ops::SwigluBackward>) {
          err = internal::LaunchSwigluBackward(
              env, a.n, GluOf(a.activation), Dev(o.gate), Dev(o.up), Dev(o.dh),
              Dev(o.d_gate), Dev(o.d_up));
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyForward>) {
          const bool rows = o.row_loss.bytes() > 0;
          err = internal::LaunchCrossEntropyForward(
              env, a.num_tokens, a.vocab_size, a.ignore_index, a.loss_divisor,
              a.logit_softcap, Dev(o.logits),
              o.targets.template As<int32_t>() + a.row_offset, Dev(o.lse),
              rows ? internal::Tensor{} : Dev(o.loss),
              rows ? o.row_loss.template As<double>() : nullptr);
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyLoss>) {
          err = internal::LaunchCrossEntropyLoss(
              env, a.num_tokens, a.vocab_size, a.ignore_index, a.loss_divisor,
              o.targets.template As<int32_t>(),
              o.row_loss.template As<double>(), Dev(o.loss));
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyBackward>) {
          err = internal::LaunchCrossEntropyBackward(
              env, a.num_tokens, a.BatchTokens(), a.row_offset, a.vocab_size,
              a.ignore_index, a.grad_scale, a.loss_divisor, a.logit_softcap,
              Dev(o.logits), o.targets.template As<int32_t>(), Dev(o.lse),
              Dev(o.d_logits));
        } else if constexpr (std::is_same_v<T, ops::Accumulate>) {
          err =
              internal::LaunchAccumulate(env, a.n, a.alpha, Dev(o.x), Dev(o.y));
        } else if constexpr (std::is_same_v<T, ops::Scale>) {
          err = internal::LaunchScale(env, a.n, a.alpha, Dev(o.x));
        } else if constexpr (std::is_same_v<T, ops::Fill>) {
          if (a.n > 0 && a.value == 0.0f && !std::signbit(a.value)) {
            // +0 is all-zero bits in every dtype.
            err = cudaMemsetAsync(
                o.x.slice.data(), 0,
                static_cast<size_t>(a.n) * k::DTypeSize(o.x.dtype), env.stream);
          } else {
            err = internal::LaunchFill(env, a.n, a.value, Dev(o.x));
          }
        } else if constexpr (std::is_same_v<T, ops::Add>) {
          err = internal::LaunchAdd(env, a.n, Dev(o.a), Dev(o.b), Dev(o.out));
        } else if constexpr (std::is_same_v<T, ops::Cast>) {
          if (a.n == 0) return;
          if (a.src == a.dst) {
            if (o.src.slice.data() != o.dst.slice.data()) {
              err = cudaMemcpyAsync(
                  o.dst.slice.data(), o.src.slice.data(),
                  static_cast<size_t>(a.n) * k::DTypeSize(a.src),
                  cudaMemcpyDeviceToDevice, env.stream);
            }
            return;
          }
          err = internal::LaunchCast(env, a.n, Dev(o.src), Dev(o.dst));
        } else if constexpr (std::is_same_v<T, ops::SumSquares>) {
          err = internal::LaunchSumSquares(env, a.n, Dev(o.x),
                                           o.out.slice.template As<float>(),
                                           o.accumulate);
        } else if constexpr (std::is_same_v<T, ops::AdamW>) {
          err =
              internal::LaunchAdamW(env, a.n, AdamWScalarsOf(a), Dev(o.params),
                                    o.grads.slice.template As<float>(),
                                    Dev(o.exp_avg), Dev(o.exp_avg_sq));
        } else {
          static_assert(kAlwaysFalse<T>, "unhandled op");
        }
      },
      call.op);
  const std::string context =
      absl::StrCat(call.label, " (", call.OpName(), ")");
  if (!status.ok()) return Annotate(status, context);
  return Annotate(CudaStatus(err, "enqueue"), context);
}

// ZERO3_CUDA_ATTENTION=simple forces the CUDA-core attention kernels (to
// rule the tensor-core ones out when chasing a numerical problem).
AttentionKernels AttentionFromEnvironment(AttentionKernels requested) {
  const char* value = std::getenv("ZERO3_CUDA_ATTENTION");
  if (value != nullptr && std::strcmp(value, "simple") == 0) {
    return AttentionKernels::kSimple;
  }
  return requested;
}

}  // namespace

KernelContext::~KernelContext() {
  matmul_.reset();
  // cudaFree waits for the device, so work still queued finishes first.
  absl::MutexLock lock(&mu_);
  for (auto& [stream, r] : streams_) {
    if (r.scratch != nullptr) cudaFree(r.scratch);
    for (void* old : r.retired) cudaFree(old);
    if (r.cublas_workspace != nullptr) cudaFree(r.cublas_workspace);
  }
  if (error_count_ != nullptr) cudaFree(error_count_);
}

cublasLtHandle_t KernelContext::cublaslt_handle() const {
  return matmul_->lt_handle();
}

cublasHandle_t KernelContext::cublas_handle() const {
  return matmul_->handle();
}

int64_t KernelContext::scratch_bytes(cudaStream_t stream) const {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(stream);
  return it == streams_.end() ? 0 : it->second.scratch_bytes;
}

absl::StatusOr<KernelContext::StreamResources*> KernelContext::ResourcesFor(
    cudaStream_t stream, int64_t scratch_bytes) const {
  auto [it, inserted] = streams_.try_emplace(stream);
  StreamResources& r = it->second;
  if (inserted) {
    if (cublas_workspace_bytes_ > 0) {
      const absl::Status status =
          CudaStatus(cudaMalloc(&r.cublas_workspace,
                                static_cast<size_t>(cublas_workspace_bytes_)),
                     "cudaMalloc(cublas workspace)");
      if (!status.ok()) {
        streams_.erase(it);
        return status;
      }
    }
    if (initial_scratch_bytes_ > 0) {
      const absl::Status status = CudaStatus(
          cudaMalloc(&r.scratch, static_cast<size_t>(initial_scratch_bytes_)),
          "cudaMalloc(scratch)");
      if (!status.ok()) {
        if (r.cublas_workspace != nullptr) cudaFree(r.cublas_workspace);
        streams_.erase(it);
        return status;
      }
      r.scratch_bytes = initial_scratch_bytes_;
    }
  }
  if (scratch_bytes <= r.scratch_bytes) return &r;
  if (!grow_scratch_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the call needs ", scratch_bytes,
                     " bytes of scratch, the context holds ", r.scratch_bytes,
                     " for this stream and may not grow"));
  }
  // Round up to 1 MiB so slightly larger shapes do not reallocate again;
  // at least double, so a run outgrows it only a few times.
  const int64_t size =
      std::max((scratch_bytes + (int64_t{1} << 20) - 1) >> 20 << 20,
               2 * r.scratch_bytes);
  void* grown = nullptr;
  ZR_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&grown, static_cast<size_t>(size)),
                                "cudaMalloc(scratch)"));
  // Work already queued on this stream may still use the old scratch: it
  // stays allocated until the context goes (no wait for the device here).
  if (r.scratch != nullptr) r.retired.push_back(r.scratch);
  r.scratch = grown;
  r.scratch_bytes = size;
  return &r;
}

absl::Status KernelContext::ConsumeDeviceErrors() const {
  int count = 0;
  {
    absl::MutexLock lock(&mu_);
    ZR_RETURN_IF_ERROR(
        CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
    ZR_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpy(&count, error_count_, sizeof(int), cudaMemcpyDeviceToHost),
        "cudaMemcpy(error count)"));
    ZR_RETURN_IF_ERROR(CudaStatus(cudaMemset(error_count_, 0, sizeof(int)),
                                  "cudaMemset(error count)"));
  }
  if (count == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(count,
                   " token or target ids outside the vocabulary were met "
                   "(their rows were skipped)"));
}

absl::StatusOr<std::unique_ptr<KernelContext>> CreateKernelContext(
    cudaStream_t stream, const KernelContextOptions& options) {
  if (options.scratch_bytes < 0 || options.cublas_workspace_bytes < 0) {
    return absl::InvalidArgumentError("negative scratch or workspace size");
  }
  std::unique_ptr<KernelContext> ctx(new KernelContext());
  ctx->stream_ = stream;
  ctx->grow_scratch_ = options.grow_scratch;
  ctx->initial_scratch_bytes_ = options.scratch_bytes;
  ctx->cublas_workspace_bytes_ = options.cublas_workspace_bytes;
  ctx->attention_ = AttentionFromEnvironment(options.attention);
  ZR_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&ctx->device_), "cudaGetDevice"));
  ZR_RETURN_IF_ERROR(CudaStatus(
      cudaDeviceGetAttribute(&ctx->sm_count_, cudaDevAttrMultiProcessorCount,
                             ctx->device_),
      "cudaDeviceGetAttribute(MultiProcessorCount)"));
  ZR_RETURN_IF_ERROR(CudaStatus(
      cudaMalloc(reinterpret_cast<void**>(&ctx->error_count_), sizeof(int)),
      "cudaMalloc(error count)"));
  ZR_RETURN_IF_ERROR(CudaStatus(cudaMemset(ctx->error_count_, 0, sizeof(int)),
                                "cudaMemset(error count)"));
  ZR_ASSIGN_OR_RETURN(ctx->matmul_, internal::MatmulRunner::Create(
                                        options.cublas_workspace_bytes));
  {
    absl::MutexLock lock(&ctx->mu_);
    ZR_RETURN_IF_ERROR(ctx->ResourcesFor(stream, 0).status());
  }
  return ctx;
}

absl::Status LaunchKernel(const runtime::KernelCall& call, cudaStream_t stream,
                          const KernelContext& ctx) {
  ZR_RETURN_IF_ERROR(Validate(call));
  absl::MutexLock lock(&ctx.mu_);
  const std::string context =
      absl::StrCat(call.label, " (", call.OpName(), ")");
  absl::StatusOr<KernelContext::StreamResources*> resources =
      ctx.ResourcesFor(stream, ScratchFor(call.op));
  if (!resources.ok()) return Annotate(resources.status(), context);
  internal::Env env;
  env.stream = stream;
  env.sm_count = ctx.sm_count_;
  env.scratch = (*resources)->scratch;
  env.scratch_bytes = (*resources)->scratch_bytes;
  env.error_count = ctx.error_count_;
  return Enqueue(call, ctx, env, *ctx.matmul_, (*resources)->cublas_workspace);
}

int64_t RequiredScratchBytes(const runtime::KernelCall& call) {
  return ScratchFor(call.op);
}

}  // namespace cuda
}  // namespace zero3
