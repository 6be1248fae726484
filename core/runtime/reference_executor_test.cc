// Copyright 2026 The zero3 Authors.

#include "core/runtime/reference_executor.h"

#include <vector>

#include "core/runtime/kernel_call.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace runtime {
namespace {

using ::zero3::testing::IsOk;

// Empty tensors have no memory behind them (a zero-byte buffer's data is
// null); an op that touches none of a tensor must not ask for it.
TEST(ReferenceExecutorTest, EmptyOperandsNeedNoMemory) {
  std::vector<float> c(35, 7.0f);
  const Buffer empty(1, 0, MemorySpace::kPinnedHost, nullptr);
  const Buffer out(2, c.size() * 4, MemorySpace::kPinnedHost, c.data());
  ops::Matmul mm;
  mm.args.m = 5;
  mm.args.n = 7;
  mm.args.k = 0;
  mm.a = TensorRef(empty.All(), DType::kF32);
  mm.b = TensorRef(empty.All(), DType::kF32);
  mm.c = TensorRef(out.All(), DType::kF32);
  ASSERT_THAT(ExecuteReference(KernelCall(mm, "k = 0")), IsOk());
  EXPECT_EQ(c, std::vector<float>(35, 0.0f));  // beta = 0

  std::vector<float> sums(2, 7.0f);
  const Buffer sum_buffer(3, 8, MemorySpace::kPinnedHost, sums.data());
  ops::SumSquares ss;
  ss.args.n = 0;
  ss.x = TensorRef(empty.All(), DType::kF32);
  ss.out = TensorRef(sum_buffer.All(), DType::kF32);
  ASSERT_THAT(ExecuteReference(KernelCall(ss, "n = 0")), IsOk());
  EXPECT_EQ(sums, std::vector<float>(2, 0.0f));

  // A tensor the op does read must have memory.
  mm.args.k = 1;
  EXPECT_EQ(ExecuteReference(KernelCall(mm, "k = 1")).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace runtime
}  // namespace zero3
