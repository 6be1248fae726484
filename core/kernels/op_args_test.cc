// Copyright 2026 The zero3 Authors.

#include "core/kernels/op_args.h"

#include "gtest/gtest.h"

namespace zero3 {
namespace kernels {
namespace {

TEST(OpArgsTest, LinearGemmShapes) {
  // y [rows, out] = x [rows, in] * W^T, W [out, in].
  const MatmulArgs forward = LinearForwardArgs(/*rows=*/5, /*in_features=*/7,
                                               /*out_features=*/3);
  EXPECT_FALSE(forward.trans_a);
  EXPECT_TRUE(forward.trans_b);
  EXPECT_EQ(forward.m, 5);
  EXPECT_EQ(forward.n, 3);
  EXPECT_EQ(forward.k, 7);
  EXPECT_EQ(forward.alpha, 1.0f);
  EXPECT_EQ(forward.beta, 0.0f);

  // dx [rows, in] = dy [rows, out] * W [out, in].
  const MatmulArgs input = LinearBackwardInputArgs(5, 7, 3);
  EXPECT_FALSE(input.trans_a);
  EXPECT_FALSE(input.trans_b);
  EXPECT_EQ(input.m, 5);
  EXPECT_EQ(input.n, 7);
  EXPECT_EQ(input.k, 3);
  EXPECT_EQ(input.beta, 0.0f);
  EXPECT_EQ(LinearBackwardInputArgs(5, 7, 3, 1.0f).beta, 1.0f);

  // dW [out, in] += dy^T [out, rows] * x [rows, in].
  const MatmulArgs weight = LinearBackwardWeightArgs(5, 7, 3);
  EXPECT_TRUE(weight.trans_a);
  EXPECT_FALSE(weight.trans_b);
  EXPECT_EQ(weight.m, 3);
  EXPECT_EQ(weight.n, 7);
  EXPECT_EQ(weight.k, 5);
  EXPECT_EQ(weight.beta, 1.0f) << "weight gradients accumulate by default";
}

TEST(OpArgsTest, AdamWDefaultsAreDeepSpeedCpuAdams) {
  const AdamWArgs args;
  EXPECT_EQ(args.step, 1);
  EXPECT_EQ(args.lr, 1e-3f);
  EXPECT_EQ(args.beta1, 0.9f);
  EXPECT_EQ(args.beta2, 0.999f);
  EXPECT_EQ(args.eps, 1e-8f);
  EXPECT_EQ(args.weight_decay, 0.0f);
  EXPECT_TRUE(args.bias_correction);
  EXPECT_TRUE(args.adamw_mode);
  EXPECT_EQ(args.grad_scale, 1.0f);
}

TEST(OpArgsTest, OtherDefaults) {
  EXPECT_EQ(CrossEntropyArgs().ignore_index, -1);
  EXPECT_EQ(CrossEntropyArgs().grad_scale, 1.0f);
  EXPECT_TRUE(AttentionArgs().causal);
  EXPECT_EQ(MatmulArgs().beta, 0.0f);
}

}  // namespace
}  // namespace kernels
}  // namespace zero3
