// Copyright 2026 The zero3 Authors.

#include "tools/calibrate/op_class.h"

#include "gtest/gtest.h"

namespace zero3 {
namespace calibrate {
namespace {

TEST(OpClassTest, SortsTheEnginesLabels) {
  EXPECT_EQ(ClassifyOp("compute", "layer 3 q_proj fwd"), OpClass::kGemm);
  EXPECT_EQ(ClassifyOp("compute", "head lm_head bwd weight"), OpClass::kGemm);
  EXPECT_EQ(ClassifyOp("compute", "layer 0 attention bwd"),
            OpClass::kAttention);
  EXPECT_EQ(ClassifyOp("compute", "layer 2 swiglu fwd"), OpClass::kElementwise);
  EXPECT_EQ(ClassifyOp("compute", "layer 2 q bias bwd"), OpClass::kElementwise);
  EXPECT_EQ(ClassifyOp("reduce", "norm of bucket 4"), OpClass::kElementwise);
  EXPECT_EQ(ClassifyOp("compute", "adamw sub-group 0"), OpClass::kOptimizer);
  EXPECT_EQ(ClassifyOp("host", "adamw sub-group 0 part 2"), OpClass::kHostAdam);
  EXPECT_EQ(ClassifyOp("reduce", "bucket param 12"), OpClass::kStridedCopy);
  // The write-back and gradient copies of pageable host memory.
  EXPECT_EQ(ClassifyOp("compute", "param H2D sub-group 0 part 1", true),
            OpClass::kPageableH2D);
  EXPECT_EQ(ClassifyOp("reduce", "grad D2H param 7", true),
            OpClass::kPageableD2H);
  EXPECT_EQ(ClassifyOp("reduce", "grad D2H param 7"), OpClass::kOther);
  // Copies, memsets, collectives and other host work are in no class.
  EXPECT_EQ(ClassifyOp("compute", "layer 2 input_layernorm bwd zero"),
            OpClass::kOther);
  EXPECT_EQ(ClassifyOp("reduce", "zero grad norm"), OpClass::kOther);
  EXPECT_EQ(ClassifyOp("reduce", "grad norm D2H"), OpClass::kOther);
  EXPECT_EQ(ClassifyOp("compute", "param H2D sub-group 0 part 1"),
            OpClass::kOther);
  EXPECT_EQ(ClassifyOp("all-gather", "all-gather param 7"), OpClass::kOther);
  EXPECT_EQ(ClassifyOp("host", "read loss"), OpClass::kOther);
}

TEST(OpClassTest, KeysReplaceNumbers) {
  EXPECT_EQ(OpLabelKey("layer 17 q_proj fwd"), "layer # q_proj fwd");
  EXPECT_EQ(OpLabelKey("adamw sub-group 0 part 12"),
            "adamw sub-group # part #");
}

}  // namespace
}  // namespace calibrate
}  // namespace zero3
