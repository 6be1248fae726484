// Copyright 2026 The zero3 Authors.
//
// LaunchKernel's contract beyond the numbers: invalid calls fail before
// anything runs and name the call (sizes, shapes, and the float arguments:
// attention's scale and caps, RMSNorm's weight offset, the activation), every
// stream of the device gets its own scratch, scratch memory grows on demand (or
// fails cleanly when it may not), and RequiredScratchBytes sizes it.

#include "backends/cuda/kernels/launch.h"

#include <cuda_runtime_api.h>

#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "backends/cuda/kernels/test_util.h"
#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"
#include "core/runtime/kernel_call.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace testing {
namespace {

using kernels::DType;
namespace ops = runtime::ops;

class LaunchTest : public KernelTest {};

// Device memory that frees itself.
class DeviceBuffer {
 public:
  DeviceBuffer(uint64_t id, int64_t bytes) {
    EXPECT_EQ(cudaMalloc(&data_, static_cast<size_t>(bytes)), cudaSuccess);
    buffer_ = runtime::Buffer(id, bytes, runtime::MemorySpace::kDevice, data_);
  }
  ~DeviceBuffer() { cudaFree(data_); }
  runtime::TensorRef Tensor(DType dtype) const {
    return runtime::TensorRef(buffer_.All(), dtype);
  }

 private:
  void* data_ = nullptr;
  runtime::Buffer buffer_;
};

TEST_F(LaunchTest, TooSmallTensorIsInvalidArgumentNamingTheCall) {
  DeviceBuffer x(1, 40);
  ops::Scale op;
  op.args.n = 11;  // 44 bytes of f32
  op.x = x.Tensor(DType::kF32);
  const absl::Status status =
      LaunchKernel(runtime::KernelCall(op, "my scale"), stream_, *ctx_);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("my scale (scale)"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("tensor x holds 10"), std::string::npos)
      << status;
}

TEST_F(LaunchTest, BadArgumentsAreInvalidArgument) {
  DeviceBuffer x(1, 1024);
  ops::RotaryForward rotary;
  rotary.args.batch = 1;
  rotary.args.seq = 2;
  rotary.args.heads = 1;
  rotary.args.head_dim = 3;  // odd
  rotary.x = x.Tensor(DType::kF32);
  rotary.y = x.Tensor(DType::kF32);
  EXPECT_EQ(
      LaunchKernel(runtime::KernelCall(rotary, "r"), stream_, *ctx_).code(),
      absl::StatusCode::kInvalidArgument);

  ops::AttentionForward attention;
  attention.args.batch = 1;
  attention.args.seq = 2;
  attention.args.num_heads = 3;
  attention.args.num_kv_heads = 2;  // does not divide 3
  attention.args.head_dim = 8;
  attention.q = attention.k = attention.v = attention.out = attention.lse =
      x.Tensor(DType::kF32);
  EXPECT_EQ(
      LaunchKernel(runtime::KernelCall(attention, "a"), stream_, *ctx_).code(),
      absl::StatusCode::kInvalidArgument);

  // Scores' scale and caps: finite and >= 0.
  for (const auto& [scale, softcap] :
       {std::pair<float, float>{-1.0f, 0.0f},
        std::pair<float, float>{std::numeric_limits<float>::quiet_NaN(), 0.0f},
        std::pair<float, float>{0.0f, -2.0f},
        std::pair<float, float>{0.0f,
                                std::numeric_limits<float>::infinity()}}) {
    ops::AttentionForward capped;
    capped.args.batch = 1;
    capped.args.seq = 2;
    capped.args.num_heads = 2;
    capped.args.num_kv_heads = 1;
    capped.args.head_dim = 8;
    capped.args.scale = scale;
    capped.args.softcap = softcap;
    capped.q = capped.k = capped.v = capped.out = capped.lse =
        x.Tensor(DType::kF32);
    const absl::Status status =
        LaunchKernel(runtime::KernelCall(capped, "a"), stream_, *ctx_);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(status.message().find(scale != 0.0f ? "scale" : "softcap"),
              std::string::npos)
        << status;
  }

  ops::RmsNormForward norm;
  norm.args.rows = 2;
  norm.args.dim = 8;
  norm.args.weight_offset = std::numeric_limits<float>::infinity();
  norm.x = norm.weight = norm.y = norm.rstd = x.Tensor(DType::kF32);
  EXPECT_EQ(LaunchKernel(runtime::KernelCall(norm, "n"), stream_, *ctx_).code(),
            absl::StatusCode::kInvalidArgument);

  ops::SwigluForward glu;
  glu.args.n = 4;
  glu.args.activation = static_cast<kernels::GluActivation>(7);
  glu.gate = glu.up = glu.h = x.Tensor(DType::kF32);
  EXPECT_EQ(LaunchKernel(runtime::KernelCall(glu, "g"), stream_, *ctx_).code(),
            absl::StatusCode::kInvalidArgument);

  ops::CrossEntropyBackward ce;
  ce.args.num_tokens = 2;
  ce.args.vocab_size = 8;
  ce.args.logit_softcap = -30.0f;
  ce.logits = ce.lse = ce.d_logits = x.Tensor(DType::kF32);
  ce.targets = x.Tensor(DType::kF32).slice;
  EXPECT_EQ(LaunchKernel(runtime::KernelCall(ce, "ce"), stream_, *ctx_).code(),
            absl::StatusCode::kInvalidArgument);

  ops::Add add;
  add.args.n = 4;
  add.a = x.Tensor(DType::kF32);
  add.b = x.Tensor(DType::kBF16);
  add.out = x.Tensor(DType::kF32);
  EXPECT_EQ(
      LaunchKernel(runtime::KernelCall(add, "add"), stream_, *ctx_).code(),
      absl::StatusCode::kInvalidArgument);

  ops::AdamW adam;
  adam.args.n = 4;
  adam.params = adam.grads = adam.exp_avg = adam.exp_avg_sq =
      x.Tensor(DType::kBF16);
  EXPECT_EQ(
      LaunchKernel(runtime::KernelCall(adam, "adam"), stream_, *ctx_).code(),
      absl::StatusCode::kInvalidArgument);
}

TEST_F(LaunchTest, AnyStreamOfTheDeviceWorksWithItsOwnScratch) {
  const int64_t n = 1 << 20;
  DeviceBuffer x(1, n * 4), out(2, 8);
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking),
            cudaSuccess);
  EXPECT_EQ(ctx_->scratch_bytes(other), 0);
  ops::Fill fill;
  fill.args.n = n;
  fill.args.value = 0.5f;
  fill.x = x.Tensor(DType::kF32);
  ASSERT_TRUE(
      LaunchKernel(runtime::KernelCall(fill, "fill"), other, *ctx_).ok());
  ops::SumSquares ss;
  ss.args.n = n;
  ss.x = x.Tensor(DType::kF32);
  ss.out = out.Tensor(DType::kF32);
  ASSERT_TRUE(LaunchKernel(runtime::KernelCall(ss, "norm"), other, *ctx_).ok());
  EXPECT_GT(ctx_->scratch_bytes(other), 0);
  float result[2] = {0, 0};
  ASSERT_EQ(cudaMemcpyAsync(result, out.Tensor(DType::kF32).slice.data(), 8,
                            cudaMemcpyDeviceToHost, other),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  EXPECT_EQ(static_cast<double>(result[0]) + result[1], 0.25 * n);
  EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
}

ops::SumSquares BigSumSquares(const DeviceBuffer& x, const DeviceBuffer& out,
                              int64_t n) {
  ops::SumSquares op;
  op.args.n = n;
  op.x = x.Tensor(DType::kF32);
  op.out = out.Tensor(DType::kF32);
  return op;
}

TEST_F(LaunchTest, ScratchGrowsOnDemand) {
  KernelContextOptions options;
  options.scratch_bytes = 0;
  absl::StatusOr<std::unique_ptr<KernelContext>> ctx =
      CreateKernelContext(stream_, options);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  const int64_t n = 1 << 20;
  DeviceBuffer x(1, n * 4), out(2, 8);
  ASSERT_EQ(
      cudaMemsetAsync(x.Tensor(DType::kF32).slice.data(), 0, n * 4, stream_),
      cudaSuccess);
  const runtime::KernelCall call(BigSumSquares(x, out, n), "norm");
  EXPECT_GT(RequiredScratchBytes(call), 0);
  EXPECT_EQ((*ctx)->scratch_bytes(stream_), 0);
  ASSERT_TRUE(LaunchKernel(call, stream_, **ctx).ok());
  EXPECT_GE((*ctx)->scratch_bytes(stream_), RequiredScratchBytes(call));
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

TEST_F(LaunchTest, ScratchThatMayNotGrowFailsCleanly) {
  KernelContextOptions options;
  options.scratch_bytes = 0;
  options.grow_scratch = false;
  absl::StatusOr<std::unique_ptr<KernelContext>> ctx =
      CreateKernelContext(stream_, options);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  const int64_t n = 1 << 20;
  DeviceBuffer x(1, n * 4), out(2, 8);
  const absl::Status status = LaunchKernel(
      runtime::KernelCall(BigSumSquares(x, out, n), "norm"), stream_, **ctx);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
}

TEST_F(LaunchTest, ContextExposesItsHandles) {
  EXPECT_NE(ctx_->cublaslt_handle(), nullptr);
  EXPECT_NE(ctx_->cublas_handle(), nullptr);
  EXPECT_GT(ctx_->sm_count(), 0);
  EXPECT_EQ(ctx_->stream(), stream_);
  EXPECT_EQ(simple_ctx_->attention(), AttentionKernels::kSimple);
}

}  // namespace
}  // namespace testing
}  // namespace cuda
}  // namespace zero3
