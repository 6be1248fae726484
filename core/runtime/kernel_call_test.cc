// Copyright 2026 The zero3 Authors.

#include "core/runtime/kernel_call.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace runtime {
namespace {

TEST(KernelCallTest, MatmulReadsCOnlyWhenAccumulating) {
  Buffer buf(1, 3 * 64, MemorySpace::kDevice, nullptr);
  ops::Matmul mm;
  mm.args.m = mm.args.n = mm.args.k = 4;
  mm.a = TensorRef::Of(buf, DType::kF32, 0, 16);
  mm.b = TensorRef::Of(buf, DType::kF32, 16, 16);
  mm.c = TensorRef::Of(buf, DType::kF32, 32, 16);
  KernelCall overwrite(mm, "y = x w");
  std::vector<Access> a = overwrite.Accesses();
  ASSERT_EQ(a.size(), 3u);
  EXPECT_FALSE(a[0].write);
  EXPECT_FALSE(a[1].write);
  EXPECT_TRUE(a[2].write);
  EXPECT_EQ(a[2].slice.offset(), 128);
  EXPECT_EQ(overwrite.OpName(), "matmul");

  mm.args.beta = 1.0f;
  std::vector<Access> acc = KernelCall(mm, "dw += ...").Accesses();
  ASSERT_EQ(acc.size(), 4u);
  EXPECT_FALSE(acc[2].write);  // c read before it is written
  EXPECT_TRUE(acc[3].write);
}

TEST(KernelCallTest, GradientAccumulatorsAreReadAndWritten) {
  Buffer buf(1, 1024, MemorySpace::kDevice, nullptr);
  ops::BiasBackward bb;
  bb.args.rows = 2;
  bb.args.cols = 4;
  bb.dy = TensorRef::Of(buf, DType::kF32, 0, 8);
  bb.d_bias = TensorRef::Of(buf, DType::kF32, 8, 4);
  std::vector<Access> a = KernelCall(bb, "db").Accesses();
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[1].slice.offset(), 32);
  EXPECT_FALSE(a[1].write);
  EXPECT_EQ(a[2].slice.offset(), 32);
  EXPECT_TRUE(a[2].write);
}

TEST(KernelCallTest, TensorRefSlicesElements) {
  Buffer buf(7, 100, MemorySpace::kDevice, nullptr);
  TensorRef t = TensorRef::Of(buf, DType::kBF16, 5, 20);
  EXPECT_EQ(t.elements(), 20);
  EXPECT_EQ(t.slice.bytes(), 40);
  TensorRef sub = t.Elements(5, 3);
  EXPECT_EQ(sub.slice.offset(), 20);
  EXPECT_EQ(sub.slice.bytes(), 6);
  EXPECT_TRUE(sub.slice.Overlaps(t.slice));
  EXPECT_FALSE(sub.slice.Overlaps(buf.Slice(0, 20)));
}

TEST(KernelCallDeathTest, SliceOutsideBufferAborts) {
  Buffer buf(7, 100, MemorySpace::kDevice, nullptr);
  EXPECT_DEATH_IF_SUPPORTED(buf.Slice(90, 20), "outside buffer of 100 bytes");
}

}  // namespace
}  // namespace runtime
}  // namespace zero3
