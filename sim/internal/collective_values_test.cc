// Copyright 2026 The zero3 Authors.

#include "sim/internal/collective_values.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/kernels/dtype.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace sim {
namespace internal {
namespace {

using kernels::DType;
using ::testing::ElementsAre;

template <typename T>
CollectiveOperands Operands(const std::vector<T>& send, std::vector<T>& recv,
                            DType dtype) {
  return {send.data(), dtype, recv.data(), dtype};
}

CollectiveValueArgs Args(CollectiveKind kind, int64_t count) {
  CollectiveValueArgs args;
  args.kind = kind;
  args.count = count;
  return args;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

TEST(CollectiveValuesTest, AllGatherF32ConcatenatesByPosition) {
  const std::vector<float> a = {1, 2}, b = {3, 4};
  std::vector<float> ra(4), rb(4);
  ComputeCollectiveValues(
      Args(CollectiveKind::kAllGather, 2),
      {Operands(a, ra, DType::kF32), Operands(b, rb, DType::kF32)});
  EXPECT_THAT(ra, ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(rb, ElementsAre(1, 2, 3, 4));
}

TEST(CollectiveValuesTest, AllGatherBF16KeepsBitPatterns) {
  // 1, 2 from rank 0; 3, -1 from rank 1.
  const std::vector<uint16_t> a = {0x3F80, 0x4000}, b = {0x4040, 0xBF80};
  std::vector<uint16_t> ra(4), rb(4);
  ComputeCollectiveValues(
      Args(CollectiveKind::kAllGather, 2),
      {Operands(a, ra, DType::kBF16), Operands(b, rb, DType::kBF16)});
  EXPECT_THAT(ra, ElementsAre(0x3F80, 0x4000, 0x4040, 0xBF80));
  EXPECT_EQ(ra, rb);
}

TEST(CollectiveValuesTest, ReduceScatterF32GivesEachPositionItsChunk) {
  const std::vector<float> a = {1, 2, 3, 4}, b = {10, 20, 30, 40};
  std::vector<float> ra(2), rb(2);
  ComputeCollectiveValues(
      Args(CollectiveKind::kReduceScatter, 4),
      {Operands(a, ra, DType::kF32), Operands(b, rb, DType::kF32)});
  EXPECT_THAT(ra, ElementsAre(11, 22));
  EXPECT_THAT(rb, ElementsAre(33, 44));
}

TEST(CollectiveValuesTest, ReduceScatterSumsFromPositiveZero) {
  const std::vector<float> a = {-0.0f, -0.0f}, b = {-0.0f, -0.0f};
  std::vector<float> ra(1), rb(1);
  ComputeCollectiveValues(
      Args(CollectiveKind::kReduceScatter, 2),
      {Operands(a, ra, DType::kF32), Operands(b, rb, DType::kF32)});
  EXPECT_EQ(Bits(ra[0]), 0u);  // +0: 0 + -0 + -0
  EXPECT_EQ(Bits(rb[0]), 0u);
}

TEST(CollectiveValuesTest, ReduceScatterBF16AccumulatesInF32AndRoundsOnce) {
  // Three ranks each send {1, 2^-8, 1}; the fp32 sums 3, 3 * 2^-8, 3 are
  // exact in bf16 (0x4040, 0x3C40), one element per position.
  const std::vector<uint16_t> in = {0x3F80, 0x3B80, 0x3F80};
  std::vector<uint16_t> r0(1), r1(1), r2(1);
  ComputeCollectiveValues(
      Args(CollectiveKind::kReduceScatter, 3),
      {Operands(in, r0, DType::kBF16), Operands(in, r1, DType::kBF16),
       Operands(in, r2, DType::kBF16)});
  EXPECT_EQ(r0[0], 0x4040);  // 3
  EXPECT_EQ(r1[0], 0x3C40);  // 3 * 2^-8 = 0.01171875
  EXPECT_EQ(r2[0], 0x4040);
}

TEST(CollectiveValuesTest, AllReduceF32SumAndMax) {
  const std::vector<float> a = {1.5f, -2}, b = {0.25f, 4}, c = {2, 0.5f};
  std::vector<float> ra(2), rb(2), rc(2);
  CollectiveValueArgs args = Args(CollectiveKind::kAllReduce, 2);
  ComputeCollectiveValues(
      args, {Operands(a, ra, DType::kF32), Operands(b, rb, DType::kF32),
             Operands(c, rc, DType::kF32)});
  EXPECT_THAT(ra, ElementsAre(3.75f, 2.5f));
  EXPECT_EQ(ra, rb);
  EXPECT_EQ(ra, rc);

  args.op = runtime::ReduceOp::kMax;
  ComputeCollectiveValues(
      args, {Operands(a, ra, DType::kF32), Operands(b, rb, DType::kF32),
             Operands(c, rc, DType::kF32)});
  EXPECT_THAT(ra, ElementsAre(2, 4));
  EXPECT_EQ(ra, rc);
}

TEST(CollectiveValuesTest, AllReduceBF16InPlaceRoundsTheF32SumOnce) {
  // 1 + 2^-8 + 2^-8 = 1 + 2^-7 in fp32 (bf16 0x3F81); rounding after each
  // addition would have stayed at 1 (ties to even).
  std::vector<uint16_t> a = {0x3F80}, b = {0x3B80}, c = {0x3B80};
  ComputeCollectiveValues(
      Args(CollectiveKind::kAllReduce, 1),
      {Operands(a, a, DType::kBF16), Operands(b, b, DType::kBF16),
       Operands(c, c, DType::kBF16)});
  EXPECT_EQ(a[0], 0x3F81);
  EXPECT_EQ(b[0], 0x3F81);
  EXPECT_EQ(c[0], 0x3F81);
}

TEST(CollectiveValuesTest, AllReduceF32IntoBF16Rounds) {
  // 1 + 3 * 2^-8 lies halfway between bf16 neighbours 1 + 2^-7 and
  // 1 + 2^-6: ties to even gives 1 + 2^-6 (0x3F82).
  const std::vector<float> a = {1.0f}, b = {0.01171875f};
  std::vector<uint16_t> ra(1), rb(1);
  ComputeCollectiveValues(Args(CollectiveKind::kAllReduce, 1),
                          {{a.data(), DType::kF32, ra.data(), DType::kBF16},
                           {b.data(), DType::kF32, rb.data(), DType::kBF16}});
  EXPECT_EQ(ra[0], 0x3F82);
  EXPECT_EQ(rb[0], 0x3F82);
}

TEST(CollectiveValuesTest, BroadcastCopiesTheRootAndLeavesItAlone) {
  std::vector<float> a = {1, 2}, b = {3, 4}, c = {5, 6};
  CollectiveValueArgs args = Args(CollectiveKind::kBroadcast, 2);
  args.root = 1;
  ComputeCollectiveValues(
      args, {Operands(a, a, DType::kF32), Operands(b, b, DType::kF32),
             Operands(c, c, DType::kF32)});
  EXPECT_THAT(a, ElementsAre(3, 4));
  EXPECT_THAT(b, ElementsAre(3, 4));
  EXPECT_THAT(c, ElementsAre(3, 4));
}

}  // namespace
}  // namespace internal
}  // namespace sim
}  // namespace zero3
