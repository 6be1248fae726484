// Copyright 2026 The zero3 Authors.

#include "core/model/document_batches.h"

#include <string>
#include <vector>

#include "core/model/data_file.h"
#include "core/model/token_file_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace model {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

// Three examples: a prompt (mask 0) then an answer (mask 1).
//   example 0: 10 11 | 12 13        (4 tokens, 2 predicted)
//   example 1: 20 | 21 22 23 24 25  (6 tokens, 5 predicted)
//   example 2: 30 31 32 | 33        (4 tokens, 1 predicted)
std::string WriteExamples(const std::string& name, std::string mask = "") {
  const std::string prefix = TempPath(name);
  WriteMegatronDataset(
      prefix, {{10, 11, 12, 13}, {20, 21, 22, 23, 24, 25}, {30, 31, 32, 33}},
      TokenDType::kUint16);
  if (mask.empty()) {
    mask = std::string("\0\0\1\1", 4) + std::string("\0\1\1\1\1\1", 6) +
           std::string("\0\0\0\1", 4);
  }
  WriteFileBytes(LossMaskPath(prefix), mask);
  return prefix;
}

DocumentOptions Options(int64_t seq) {
  DocumentOptions o;
  o.vocab = 64;
  o.seq = seq;
  o.shuffle = false;
  return o;
}

TEST(DocumentBatchesTest, OneExamplePerSampleTargetsOnlyWhatTheMaskPredicts) {
  const std::string prefix = WriteExamples("pad");
  ASSERT_OK_AND_ASSIGN(auto source, DocumentBatches(prefix, Options(5)));
  EXPECT_EQ(source->samples_per_epoch(), 3);
  EXPECT_TRUE(source->masks_targets());
  EXPECT_THAT(source->description(),
              AllOf(HasSubstr("3 examples"), HasSubstr("8 of 14 tokens")));
  const BatchShape shape{3, 5, 1, 1};
  std::vector<int32_t> tokens, targets;
  ASSERT_OK(source->Fill(shape, 0, 0, 0, &tokens, &targets));
  // Example 0: inputs 10 11 12 13 then padding; token 11 is a prompt
  // token, so the first target is not predicted.
  EXPECT_THAT(std::vector<int32_t>(tokens.begin(), tokens.begin() + 5),
              ElementsAre(10, 11, 12, 13, 0));
  EXPECT_THAT(std::vector<int32_t>(targets.begin(), targets.begin() + 5),
              ElementsAre(-1, 12, 13, -1, -1));
  // Example 1 fills the sample exactly.
  EXPECT_THAT(std::vector<int32_t>(targets.begin() + 5, targets.begin() + 10),
              ElementsAre(21, 22, 23, 24, 25));
  EXPECT_THAT(std::vector<int32_t>(targets.begin() + 10, targets.end()),
              ElementsAre(-1, -1, 33, -1, -1));
  ASSERT_OK_AND_ASSIGN(const int64_t predicted,
                       source->PredictedTargets(shape, 0));
  EXPECT_EQ(predicted, 2 + 5 + 1);
}

TEST(DocumentBatchesTest, PredictedTargetsCountTheWholeGlobalBatch) {
  const std::string prefix = WriteExamples("global");
  ASSERT_OK_AND_ASSIGN(auto source, DocumentBatches(prefix, Options(5)));
  // One sample per micro-batch, two ranks, two micro-batches: step 0 is
  // examples 0 1 2 0 (epoch 1 starts again in file order).
  const BatchShape shape{1, 5, 2, 2};
  ASSERT_OK_AND_ASSIGN(const int64_t predicted,
                       source->PredictedTargets(shape, 0));
  EXPECT_EQ(predicted, 2 + 5 + 1 + 2);
}

// Packed: examples one after another while they fit (an example of L tokens
// takes L - 1 rows), positions from 0 in each, padding after the last.
TEST(DocumentBatchesTest, PackingFillsSamplesWithWholeExamples) {
  const std::string prefix = WriteExamples("packed");
  DocumentOptions o = Options(8);
  o.pack = true;
  ASSERT_OK_AND_ASSIGN(auto source, DocumentBatches(prefix, o));
  EXPECT_TRUE(source->packs());
  EXPECT_EQ(source->samples_per_epoch(), 2);  // 3 + 5 rows, then 3
  EXPECT_THAT(source->description(), HasSubstr("packed into 2 samples"));
  std::vector<int32_t> tokens, targets, positions;
  ASSERT_OK(source->Fill({2, 8, 1, 1}, 0, 0, 0, &tokens, &targets, &positions));
  EXPECT_THAT(std::vector<int32_t>(tokens.begin(), tokens.begin() + 8),
              ElementsAre(10, 11, 12, 20, 21, 22, 23, 24));
  EXPECT_THAT(std::vector<int32_t>(targets.begin(), targets.begin() + 8),
              ElementsAre(-1, 12, 13, 21, 22, 23, 24, 25));
  EXPECT_THAT(std::vector<int32_t>(positions.begin(), positions.begin() + 8),
              ElementsAre(0, 1, 2, 0, 1, 2, 3, 4));
  EXPECT_THAT(std::vector<int32_t>(tokens.begin() + 8, tokens.end()),
              ElementsAre(30, 31, 32, 0, 0, 0, 0, 0));
  EXPECT_THAT(std::vector<int32_t>(targets.begin() + 8, targets.end()),
              ElementsAre(-1, -1, 33, -1, -1, -1, -1, -1));
  EXPECT_THAT(std::vector<int32_t>(positions.begin() + 8, positions.end()),
              ElementsAre(0, 1, 2, 0, 1, 2, 3, 4));
  ASSERT_OK_AND_ASSIGN(const int64_t predicted,
                       source->PredictedTargets({2, 8, 1, 1}, 0));
  EXPECT_EQ(predicted, 2 + 5 + 1);
}

TEST(DocumentBatchesTest, LongExamplesAreTruncatedOrRefused) {
  const std::string prefix = WriteExamples("long");
  ASSERT_OK_AND_ASSIGN(auto source, DocumentBatches(prefix, Options(3)));
  EXPECT_THAT(source->description(),
              HasSubstr("1 truncated to 4 tokens, keeping 6 predicted tokens"));
  std::vector<int32_t> tokens, targets;
  ASSERT_OK(source->Fill({1, 3, 1, 1}, 1, 0, 0, &tokens, &targets));
  EXPECT_THAT(tokens, ElementsAre(20, 21, 22));
  EXPECT_THAT(targets, ElementsAre(21, 22, 23));
  DocumentOptions strict = Options(3);
  strict.truncate = false;
  EXPECT_THAT(DocumentBatches(prefix, strict),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("example 1 has 6 tokens"),
                             HasSubstr("raise --seq to 5"))));
}

// Answers come last: a --seq that cuts every one off trains on nothing, and
// one that cuts some off says how many examples it emptied.
TEST(DocumentBatchesTest, TruncationThatDropsAnswersIsReported) {
  const std::string prefix =
      WriteExamples("late_answers", std::string("\0\0\1\1", 4) +
                                        std::string("\0\0\1\1\1\1", 6) +
                                        std::string("\0\0\0\1", 4));
  EXPECT_THAT(DocumentBatches(prefix, Options(1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("cuts off every predicted token"),
                             HasSubstr("raise --seq to 5"))));
  ASSERT_OK_AND_ASSIGN(auto source, DocumentBatches(prefix, Options(2)));
  EXPECT_THAT(source->description(),
              HasSubstr("keeping 2 predicted tokens; 1 lose all of theirs"));
}

TEST(DocumentBatchesTest, BadMasksAreErrorsNamingTheFile) {
  const std::string shorter = WriteExamples("short_mask", std::string(13, 1));
  EXPECT_THAT(DocumentBatches(shorter, Options(5)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(LossMaskPath(shorter)),
                             HasSubstr("13 bytes"), HasSubstr("14 tokens"))));
  std::string two(14, 1);
  two[6] = 2;
  const std::string bad = WriteExamples("bad_mask", two);
  EXPECT_THAT(DocumentBatches(bad, Options(5)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("byte 6 is 2"))));
  const std::string none = WriteExamples("no_mask", std::string(14, '\0'));
  EXPECT_THAT(DocumentBatches(none, Options(5)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("nothing to train on")));
}

TEST(DocumentBatchesTest, DataFilePicksExamplesWhereAMaskExists) {
  const std::string prefix = WriteExamples("data_file");
  DataFileOptions o;
  o.vocab = 64;
  o.seq = 3;
  ASSERT_OK_AND_ASSIGN(auto source, OpenDataFile(prefix, o));
  EXPECT_THAT(source->description(), HasSubstr("fine-tuning examples"));
  o.packing = DataPacking::kStream;
  ASSERT_OK_AND_ASSIGN(source, OpenDataFile(prefix, o));
  EXPECT_FALSE(source->masks_targets());
  EXPECT_THAT(source->description(), HasSubstr("token file"));
  // A dataset without a mask cannot be padded.
  const std::string plain = TempPath("plain");
  WriteMegatronDataset(plain, {{1, 2, 3, 4, 5}}, TokenDType::kUint16);
  o.packing = DataPacking::kPad;
  EXPECT_THAT(OpenDataFile(plain, o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(LossMaskPath(plain))));
  EXPECT_THAT(ParseDataPacking("packed"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pad")));
}

}  // namespace
}  // namespace model
}  // namespace zero3
