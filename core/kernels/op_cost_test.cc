// Copyright 2026 The zero3 Authors.

#include "core/kernels/op_cost.h"

#include <sstream>

#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace kernels {
namespace {

OpCost MakeCost(int64_t flops, int64_t read, int64_t written) {
  OpCost cost;
  cost.flops = flops;
  cost.bytes_read = read;
  cost.bytes_written = written;
  return cost;
}

TEST(OpCostTest, MatmulByHand) {
  MatmulArgs args;
  args.m = 64;
  args.n = 256;
  args.k = 128;
  // 2 * 64 * 256 * 128 = 4,194,304 flops. bf16: A is 64*128*2 = 16,384
  // bytes, B is 128*256*2 = 65,536, C is 64*256*2 = 32,768.
  EXPECT_EQ(MatmulCost(args, DType::kBF16), MakeCost(4194304, 81920, 32768));
  // beta != 0 also reads C; f32 doubles every byte count.
  args.beta = 1.0f;
  EXPECT_EQ(MatmulCost(args, DType::kF32), MakeCost(4194304, 229376, 65536));
  // Transposes change the layout, not the cost.
  args.trans_a = true;
  args.trans_b = true;
  EXPECT_EQ(MatmulCost(args, DType::kF32), MakeCost(4194304, 229376, 65536));
}

TEST(OpCostTest, LinearLayerBackwardIsTwiceForward) {
  // The 6 * params * tokens rule: forward 2NT, backward 4NT.
  const int64_t rows = 512, in = 896, out = 4864;
  const OpCost forward =
      MatmulCost(LinearForwardArgs(rows, in, out), DType::kBF16);
  const OpCost backward =
      MatmulCost(LinearBackwardInputArgs(rows, in, out), DType::kBF16) +
      MatmulCost(LinearBackwardWeightArgs(rows, in, out), DType::kBF16);
  EXPECT_EQ(forward.flops, 2 * rows * in * out);
  EXPECT_EQ(backward.flops, 2 * forward.flops);
}

TEST(OpCostTest, AttentionByHand) {
  AttentionArgs args;
  args.batch = 2;
  args.seq = 128;
  args.num_heads = 8;
  args.num_kv_heads = 2;
  args.head_dim = 64;
  // Causal forward: 4 * B * Hq * S^2 * D / 2 = 2 * 2 * 8 * 16384 * 64
  // = 33,554,432. q has 2*128*8*64 = 131,072 elements, k and v 32,768 each;
  // lse has 2*8*128 = 2,048 fp32 values.
  //   read    (131072 + 2*32768) * 2 = 393,216
  //   written 131072 * 2 + 2048 * 4  = 270,336
  EXPECT_EQ(AttentionForwardCost(args, DType::kBF16),
            MakeCost(33554432, 393216, 270336));
  // Backward: 2.5x the flops = 83,886,080.
  //   read    (3*131072 + 2*32768) * 2 + 2048 * 4 = 925,696
  //   written (131072 + 2*32768) * 2             = 393,216
  EXPECT_EQ(AttentionBackwardCost(args, DType::kBF16),
            MakeCost(83886080, 925696, 393216));
  // Without the mask, twice the work.
  args.causal = false;
  EXPECT_EQ(AttentionForwardCost(args, DType::kBF16).flops, 67108864);
  EXPECT_EQ(AttentionBackwardCost(args, DType::kBF16).flops, 167772160);
  // A causal sliding window of 32 keys: 4 * B * Hq * D * (S*W - W^2/2)
  // = 4096 * (4096 - 512) = 14,680,064; one as long as the sequence
  // changes nothing.
  args.causal = true;
  args.window = 32;
  EXPECT_EQ(AttentionForwardCost(args, DType::kBF16).flops, 14680064);
  EXPECT_EQ(AttentionBackwardCost(args, DType::kBF16).flops, 36700160);
  args.window = 128;
  EXPECT_EQ(AttentionForwardCost(args, DType::kBF16).flops, 33554432);
}

TEST(OpCostTest, ModelScaleAttentionNeedsNo32BitIntermediates) {
  // Qwen2.5-7B's attention at 32k context, a batch of 8: about 6.2e13
  // flops, far beyond 2^32, so any 32-bit intermediate would show.
  AttentionArgs args;
  args.batch = 8;
  args.seq = 32768;
  args.num_heads = 28;
  args.num_kv_heads = 4;
  args.head_dim = 128;
  const int64_t expected = 2LL * 8 * 28 * 32768 * 32768 * 128;
  EXPECT_EQ(AttentionForwardCost(args, DType::kBF16).flops, expected);
  EXPECT_EQ(AttentionBackwardCost(args, DType::kBF16).flops, expected / 2 * 5);
}

TEST(OpCostTest, NormsAndActivations) {
  RmsNormArgs norm;
  norm.rows = 10;
  norm.dim = 8;
  EXPECT_EQ(RmsNormForwardCost(norm, DType::kF32),
            MakeCost(4 * 80, (80 + 8) * 4, 80 * 4 + 10 * 4));
  EXPECT_EQ(RmsNormBackwardCost(norm, DType::kBF16),
            MakeCost(9 * 80, (160 + 16) * 2 + 40, (80 + 8) * 2));

  SwigluArgs swiglu;
  swiglu.n = 100;
  EXPECT_EQ(SwigluForwardCost(swiglu, DType::kBF16), MakeCost(600, 400, 200));
  EXPECT_EQ(SwigluBackwardCost(swiglu, DType::kBF16), MakeCost(1200, 600, 400));
  swiglu.activation = GluActivation::kGeluTanh;  // GeGLU: same bytes
  EXPECT_EQ(SwigluForwardCost(swiglu, DType::kBF16), MakeCost(1000, 400, 200));
  EXPECT_EQ(SwigluBackwardCost(swiglu, DType::kBF16), MakeCost(1800, 600, 400));

  RotaryArgs rotary;
  rotary.batch = 2;
  rotary.seq = 5;
  rotary.heads = 4;
  rotary.head_dim = 6;
  EXPECT_EQ(RotaryForwardCost(rotary, DType::kF16), MakeCost(720, 480, 480));
  EXPECT_EQ(RotaryBackwardCost(rotary, DType::kF16),
            RotaryForwardCost(rotary, DType::kF16));

  BiasArgs bias;
  bias.rows = 3;
  bias.cols = 5;
  EXPECT_EQ(BiasAddCost(bias, DType::kF32), MakeCost(15, 80, 60));
  EXPECT_EQ(BiasBackwardCost(bias, DType::kF32), MakeCost(15, 80, 20));
}

TEST(OpCostTest, EmbeddingAndCrossEntropy) {
  EmbeddingArgs embedding;
  embedding.num_tokens = 16;
  embedding.vocab_size = 1000;
  embedding.dim = 32;
  EXPECT_EQ(EmbeddingForwardCost(embedding, DType::kBF16),
            MakeCost(0, 64 + 1024, 1024));
  EXPECT_EQ(EmbeddingBackwardCost(embedding, DType::kF32),
            MakeCost(512, 64 + 4096, 2048));

  CrossEntropyArgs ce;
  ce.num_tokens = 4;
  ce.vocab_size = 11;
  EXPECT_EQ(CrossEntropyForwardCost(ce, DType::kF32),
            MakeCost(176, 176 + 16, 16));
  EXPECT_EQ(CrossEntropyBackwardCost(ce, DType::kF32),
            MakeCost(176, 176 + 32, 176));
  EXPECT_EQ(CrossEntropyLossCost(ce), MakeCost(8, 16 + 32, 4));
  ce.logit_softcap = 30.0f;  // the cap's tanh per logit, each way
  EXPECT_EQ(CrossEntropyForwardCost(ce, DType::kF32),
            MakeCost(7 * 44, 176 + 16, 16));
  EXPECT_EQ(CrossEntropyBackwardCost(ce, DType::kF32),
            MakeCost(8 * 44, 176 + 32, 176));
}

TEST(OpCostTest, ElementwiseReductionsAndOptimizer) {
  AccumulateArgs accumulate;
  accumulate.n = 10;
  EXPECT_EQ(AccumulateCost(accumulate, DType::kF32), MakeCost(20, 80, 40));
  EXPECT_EQ(AccumulateCost(accumulate, DType::kBF16, DType::kF32),
            MakeCost(20, 60, 40));
  ScaleArgs scale;
  scale.n = 10;
  EXPECT_EQ(ScaleCost(scale, DType::kBF16), MakeCost(10, 20, 20));
  FillArgs fill;
  fill.n = 10;
  EXPECT_EQ(FillCost(fill, DType::kF32), MakeCost(0, 0, 40));
  AddArgs add;
  add.n = 10;
  EXPECT_EQ(AddCost(add, DType::kF16), MakeCost(10, 40, 20));
  CastArgs cast;
  cast.n = 10;
  cast.src = DType::kF32;
  cast.dst = DType::kBF16;
  EXPECT_EQ(CastCost(cast), MakeCost(0, 40, 20));
  ReduceArgs reduce;
  reduce.n = 10;
  EXPECT_EQ(SumSquaresCost(reduce, DType::kF32), MakeCost(20, 40, 0));
  EXPECT_EQ(AllFiniteCost(reduce, DType::kBF16), MakeCost(10, 20, 0));
  AdamWArgs adam;
  adam.n = 10;
  EXPECT_EQ(AdamWCost(adam), MakeCost(130, 160, 120));
  adam.weight_decay = 0.1f;
  EXPECT_EQ(AdamWCost(adam), MakeCost(150, 160, 120));
}

TEST(OpCostTest, SumAndPrint) {
  OpCost total = MakeCost(1, 2, 3) + MakeCost(10, 20, 30);
  EXPECT_EQ(total, MakeCost(11, 22, 33));
  EXPECT_EQ(total.bytes(), 55);
  std::ostringstream os;
  os << total;
  EXPECT_EQ(os.str(), "{flops=11 read=22 written=33}");
}

}  // namespace
}  // namespace kernels
}  // namespace zero3
