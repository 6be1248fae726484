// Copyright 2026 The zero3 Authors.

#include "core/model/data.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace model {
namespace {

using ::zero3::testing::StatusIs;

TEST(DataTest, TargetsAreInputsShiftedByOne) {
  auto source = SyntheticBatches(50, 1);
  BatchShape shape{2, 8, 1, 1};
  std::vector<int32_t> tokens, targets;
  ASSERT_OK(source->Fill(shape, 0, 0, 0, &tokens, &targets));
  ASSERT_EQ(tokens.size(), 16u);
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i + 1 < 8; ++i) {
      EXPECT_EQ(targets[b * 8 + i], tokens[b * 8 + i + 1]);
    }
  }
  for (int32_t t : tokens) EXPECT_TRUE(t >= 0 && t < 50);
}

TEST(DataTest, RankBatchesTileTheGlobalBatch) {
  // Two ranks with one sequence each see the two sequences one rank with
  // two sequences sees.
  auto source = SyntheticBatches(1000, 3);
  std::vector<int32_t> one, t1, r0, t2, r1, t3;
  ASSERT_OK(source->Fill({2, 6, 1, 1}, 4, 0, 0, &one, &t1));
  ASSERT_OK(source->Fill({1, 6, 1, 2}, 4, 0, 0, &r0, &t2));
  ASSERT_OK(source->Fill({1, 6, 1, 2}, 4, 0, 1, &r1, &t3));
  r0.insert(r0.end(), r1.begin(), r1.end());
  EXPECT_EQ(one, r0);
}

TEST(DataTest, TextWindowsComeFromTheFile) {
  const std::string path = ::testing::TempDir() + "/corpus.txt";
  std::ofstream(path) << "abcdefghijklmnopqrstuvwxyz";
  ASSERT_OK_AND_ASSIGN(auto source, TextBatches(path, 5, 9));
  std::vector<int32_t> tokens, targets;
  ASSERT_OK(source->Fill({3, 5, 1, 1}, 0, 0, 0, &tokens, &targets));
  for (int b = 0; b < 3; ++b) {
    for (int i = 0; i < 5; ++i) {
      EXPECT_GE(tokens[b * 5 + i], 'a');
      EXPECT_LE(tokens[b * 5 + i], 'z');
      EXPECT_EQ(targets[b * 5 + i], tokens[b * 5 + i] + 1);  // the alphabet
    }
  }
  EXPECT_THAT(TextBatches(path, 40, 9),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(TextBatches(path + ".missing", 5, 9),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST(DataTest, PositionsOfSourcesWithoutEpochs) {
  // Synthetic tokens have no epochs: the position is the sample number.
  auto run = SyntheticBatches(1000, 4);
  const BatchShape shape{2, 6, 2, 3};  // 12 samples a step
  EXPECT_EQ(run->PositionAt(shape, 5), (DataPosition{0, 60}));
  std::vector<int32_t> want, t1, got, t2;
  ASSERT_OK(run->Fill(shape, 5, 1, 2, &want, &t1));
  auto resumed = SyntheticBatches(1000, 4);
  ASSERT_OK(resumed->SetPosition(shape, 0, DataPosition{0, 60}));
  ASSERT_OK(resumed->Fill(shape, 0, 1, 2, &got, &t2));
  EXPECT_EQ(got, want);
  EXPECT_THAT(resumed->SetPosition(shape, 0, DataPosition{1, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("no epochs")));
}

}  // namespace
}  // namespace model
}  // namespace zero3
