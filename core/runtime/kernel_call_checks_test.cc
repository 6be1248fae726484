// Copyright 2026 The zero3 Authors.

#include "core/runtime/kernel_call_checks.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace runtime {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

// A matmul of [m, k] x [k, n] with every operand a buffer of 64 floats,
// with data behind it, or none (as in the simulator's timing mode).
KernelCall MatmulCall(int64_t m, int64_t n, int64_t k, bool with_data) {
  static std::vector<float> storage(64);
  const Buffer buffer(1, 64 * 4, MemorySpace::kDevice,
                      with_data ? storage.data() : nullptr);
  ops::Matmul mm;
  mm.args.m = m;
  mm.args.n = n;
  mm.args.k = k;
  mm.a = TensorRef(buffer.All(), DType::kF32);
  mm.b = TensorRef(buffer.All(), DType::kF32);
  mm.c = TensorRef(buffer.All(), DType::kF32);
  return KernelCall(mm, "q_proj");
}

TEST(KernelCallChecksTest, CountsAndSizesNameTheCall) {
  EXPECT_THAT(CheckKernelCall(MatmulCall(8, 8, 8, true), true), IsOk());
  EXPECT_THAT(CheckKernelCall(MatmulCall(16, 8, 8, true), true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("q_proj (matmul): tensor a holds 64 "
                                 "elements, the op needs 128")));
  EXPECT_THAT(CheckKernelCall(MatmulCall(-1, 8, 8, true), true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("m is negative (-1)")));
}

// Timing mode checks the same rules without data; backends that compute
// need the data.
TEST(KernelCallChecksTest, DataIsNeededOnlyWhereTheCallComputes) {
  EXPECT_THAT(CheckKernelCall(MatmulCall(8, 8, 8, false), false), IsOk());
  EXPECT_THAT(CheckKernelCall(MatmulCall(16, 8, 8, false), false),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CheckKernelCall(MatmulCall(8, 8, 8, false), true),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("has no data")));
}

TEST(KernelCallChecksTest, TheOpsOwnRules) {
  std::vector<float> storage(64);
  const Buffer buffer(1, 64 * 4, MemorySpace::kDevice, storage.data());
  ops::AdamW adam;
  adam.args.n = 16;
  adam.args.step = 1;
  adam.params = TensorRef(buffer.All(), DType::kF32);
  adam.grads = TensorRef(buffer.All(), DType::kBF16);
  adam.exp_avg = TensorRef(buffer.All(), DType::kF32);
  adam.exp_avg_sq = TensorRef(buffer.All(), DType::kF32);
  EXPECT_THAT(CheckKernelCall(KernelCall(adam, "step"), true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor grads must be f32, is bf16")));
  adam.grads = TensorRef(buffer.All(), DType::kF32);
  adam.args.step = 0;
  EXPECT_THAT(CheckKernelCall(KernelCall(adam, "step"), true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("AdamW steps count from 1")));
  // bf16 state is allowed (the moments of one dtype); fp16 is not.
  adam.args.step = 1;
  adam.params = TensorRef(buffer.All(), DType::kBF16);
  adam.exp_avg = TensorRef(buffer.All(), DType::kBF16);
  adam.exp_avg_sq = TensorRef(buffer.All(), DType::kBF16);
  EXPECT_THAT(CheckKernelCall(KernelCall(adam, "step"), true), IsOk());
  adam.exp_avg_sq = TensorRef(buffer.All(), DType::kF32);
  EXPECT_THAT(CheckKernelCall(KernelCall(adam, "step"), true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("two moments have one dtype")));
  adam.params = TensorRef(buffer.All(), DType::kF16);
  EXPECT_THAT(
      CheckKernelCall(KernelCall(adam, "step"), true),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fp32 or bf16")));

  ops::AttentionForward attention;
  attention.args.batch = 1;
  attention.args.seq = 1;
  attention.args.num_heads = 3;
  attention.args.num_kv_heads = 2;
  attention.args.head_dim = 4;
  for (TensorRef* t : {&attention.q, &attention.k, &attention.v, &attention.out,
                       &attention.lse}) {
    *t = TensorRef(buffer.All(), DType::kF32);
  }
  EXPECT_THAT(CheckKernelCall(KernelCall(attention, "attn"), true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("num_heads must be a multiple of "
                                 "num_kv_heads")));
}

}  // namespace
}  // namespace runtime
}  // namespace zero3
