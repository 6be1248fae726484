// Copyright 2026 The zero3 Authors.

#include "core/runtime/launch_count.h"

#include "gtest/gtest.h"

namespace zero3 {
namespace runtime {
namespace {

TEST(LaunchCountTest, MultiKernelOpsCountEachLaunch) {
  ops::AttentionBackward ab;
  ab.args.batch = 1;
  ab.args.seq = 64;
  EXPECT_EQ(LaunchesOf(KernelCall(ab, "attn bwd")), 3);
  ops::CrossEntropyForward ce;
  ce.args.num_tokens = 8;
  ce.args.vocab_size = 16;
  EXPECT_EQ(LaunchesOf(KernelCall(ce, "ce")), 2);
  ops::Matmul mm;
  mm.args.m = mm.args.n = mm.args.k = 32;
  EXPECT_EQ(LaunchesOf(KernelCall(mm, "mm")), 1);
}

TEST(LaunchCountTest, ChunkedLossWritesRowsThenOneMean) {
  Buffer rows(1, 64, MemorySpace::kDevice, nullptr);
  ops::CrossEntropyForward ce;
  ce.args.num_tokens = 8;
  ce.args.vocab_size = 16;
  ce.row_loss = rows.Slice(0, 64);
  EXPECT_EQ(LaunchesOf(KernelCall(ce, "ce chunk")), 1);
  ops::CrossEntropyLoss loss;
  loss.args = ce.args;
  EXPECT_EQ(LaunchesOf(KernelCall(loss, "ce loss")), 1);
}

TEST(LaunchCountTest, EmptyOpsLaunchNothingButTheLossSum) {
  ops::AttentionBackward ab;
  EXPECT_EQ(LaunchesOf(KernelCall(ab, "attn bwd")), 0);
  ops::Matmul mm;
  mm.args.m = 4;
  EXPECT_EQ(LaunchesOf(KernelCall(mm, "mm")), 0);
  ops::CrossEntropyForward ce;  // the mean of no rows is still written
  EXPECT_EQ(LaunchesOf(KernelCall(ce, "ce")), 1);
}

TEST(LaunchCountTest, SameDtypeCastIsACopyUnlessInPlace) {
  Buffer buf(1, 64, MemorySpace::kDevice, nullptr);
  ops::Cast same = ops::Cast::Of(TensorRef::Of(buf, DType::kF32, 0, 8),
                                 TensorRef::Of(buf, DType::kF32, 0, 8));
  EXPECT_EQ(LaunchesOf(KernelCall(same, "in place")), 0);
  same.dst = TensorRef::Of(buf, DType::kF32, 8, 8);
  EXPECT_EQ(LaunchesOf(KernelCall(same, "copy")), 1);
}

TEST(LaunchCountTest, EmbeddingBackwardSortsByTokenIds) {
  ops::EmbeddingBackward eb;
  eb.args.num_tokens = 8;
  eb.args.vocab_size = 100;
  eb.args.dim = 4;
  EXPECT_EQ(LaunchesOf(KernelCall(eb, "emb bwd")), 3);  // one-tile sort
  eb.args.num_tokens = 4096;
  eb.args.vocab_size = 151936;  // 18-bit ids: three digit passes
  EXPECT_EQ(LaunchesOf(KernelCall(eb, "emb bwd")), 2 + 2 + 3);
}

}  // namespace
}  // namespace runtime
}  // namespace zero3
