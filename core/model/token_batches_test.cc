// Copyright 2026 The zero3 Authors.

#include "core/model/token_batches.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "core/model/megatron_index.h"
#include "core/model/token_file_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace model {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

constexpr int64_t kSeq = 4;
constexpr int64_t kVocab = 1 << 20;

// A uint32 file whose token i is i, so a sample's first token tells which
// window it is (first / kSeq).
std::unique_ptr<BatchSource> Counting(int64_t tokens, uint64_t seed) {
  std::vector<int64_t> ids(tokens);
  std::iota(ids.begin(), ids.end(), 0);
  const std::string path = TempPath("counting.bin");
  WriteFileBytes(path, TokenBytes(ids, TokenDType::kUint32));
  auto stream = OpenFlatTokens(path, TokenDType::kUint32);
  EXPECT_OK(stream.status());
  auto source = TokenBatches(*std::move(stream), kVocab, kSeq, seed);
  EXPECT_OK(source.status());
  return *std::move(source);
}

// The windows (first token / kSeq) of global batch `step`, in rank, then
// micro-batch, then sequence order.
std::vector<int64_t> GlobalBatch(const BatchSource& source,
                                 const BatchShape& shape, int64_t step) {
  std::vector<int64_t> windows;
  for (int rank = 0; rank < shape.world; ++rank) {
    for (int micro = 0; micro < shape.accumulation; ++micro) {
      std::vector<int32_t> tokens, targets;
      EXPECT_OK(source.Fill(shape, step, micro, rank, &tokens, &targets));
      for (int64_t b = 0; b < shape.batch; ++b) {
        windows.push_back(tokens[b * kSeq] / kSeq);
      }
    }
  }
  return windows;
}

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(TokenBatchesTest, SamplesAreWindowsOfSeqPlusOneTokensEverySeqTokens) {
  // 41 tokens: (41 - 1) / 4 = 10 windows; window k is tokens [4k, 4k + 5).
  auto source = Counting(41, 1);
  EXPECT_EQ(source->samples_per_epoch(), 10);
  EXPECT_THAT(source->description(),
              AllOf(HasSubstr("counting.bin"), HasSubstr("uint32"),
                    HasSubstr("41 tokens"), HasSubstr("10 samples")));
  const BatchShape shape{/*batch=*/5, kSeq, /*accumulation=*/1, /*world=*/1};
  std::vector<int64_t> epoch;
  for (int64_t step = 0; step < 2; ++step) {
    std::vector<int32_t> tokens, targets;
    ASSERT_OK(source->Fill(shape, step, 0, 0, &tokens, &targets));
    for (int64_t b = 0; b < 5; ++b) {
      const int32_t first = tokens[b * kSeq];
      EXPECT_EQ(first % kSeq, 0);
      for (int64_t i = 0; i < kSeq; ++i) {
        EXPECT_EQ(tokens[b * kSeq + i], first + i);
        EXPECT_EQ(targets[b * kSeq + i], first + i + 1);
      }
      epoch.push_back(first / kSeq);
    }
  }
  // One epoch takes every window once, shuffled.
  std::vector<int64_t> all(10);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(Sorted(epoch), all);
  EXPECT_NE(epoch, all);
}

TEST(TokenBatchesTest, OrderIsSeeded) {
  const BatchShape shape{4, kSeq, 1, 1};
  auto a = Counting(401, 7);
  auto b = Counting(401, 7);
  auto c = Counting(401, 8);
  for (int64_t step = 0; step < 30; ++step) {  // 100 samples: 3 epochs
    EXPECT_EQ(GlobalBatch(*a, shape, step), GlobalBatch(*b, shape, step));
  }
  EXPECT_NE(GlobalBatch(*a, shape, 0), GlobalBatch(*c, shape, 0));
  // Epochs 0 and 1 both take all 100 windows, in different orders.
  std::vector<int64_t> e0, e1;
  for (int64_t step = 0; step < 25; ++step) {
    const std::vector<int64_t> w = GlobalBatch(*a, shape, step);
    e0.insert(e0.end(), w.begin(), w.end());
    const std::vector<int64_t> w1 = GlobalBatch(*a, shape, step + 25);
    e1.insert(e1.end(), w1.begin(), w1.end());
  }
  EXPECT_EQ(Sorted(e0), Sorted(e1));
  EXPECT_EQ(std::set<int64_t>(e0.begin(), e0.end()).size(), 100u);
  EXPECT_NE(e0, e1);
}

TEST(TokenBatchesTest, GlobalBatchDoesNotDependOnTheRanks) {
  // 8 samples per global batch, split over 1, 2 and 4 ranks, with and
  // without accumulation.
  auto source = Counting(401, 3);
  const BatchShape shapes[] = {
      {8, kSeq, 1, 1}, {4, kSeq, 1, 2}, {2, kSeq, 1, 4},
      {2, kSeq, 2, 2}, {1, kSeq, 2, 4}, {1, kSeq, 8, 1},
  };
  for (int64_t step = 0; step < 15; ++step) {  // past the epoch end
    const std::vector<int64_t> one =
        Sorted(GlobalBatch(*source, shapes[0], step));
    for (const BatchShape& s : shapes) {
      EXPECT_EQ(Sorted(GlobalBatch(*source, s, step)), one)
          << "step " << step << ", " << s.world << " ranks, batch " << s.batch
          << ", accumulation " << s.accumulation;
    }
  }
}

TEST(TokenBatchesTest, RestoringThePositionGivesTheSameNextBatches) {
  const BatchShape shape{2, kSeq, 1, 2};  // 4 samples a step, 10 an epoch
  auto run = Counting(41, 11);
  std::vector<std::vector<int64_t>> batches;
  for (int64_t step = 0; step < 8; ++step) {
    batches.push_back(GlobalBatch(*run, shape, step));
  }
  const DataPosition saved = run->PositionAt(shape, 3);  // 12 samples in
  EXPECT_EQ(saved, (DataPosition{1, 2}));
  // A new run resumes at step 3 (as a restored engine), or counts its steps
  // from 0, or goes on with another split of the same global batch.
  auto resumed = Counting(41, 11);
  ASSERT_OK(resumed->SetPosition(shape, 3, saved));
  EXPECT_EQ(resumed->PositionAt(shape, 3), saved);
  for (int64_t step = 3; step < 8; ++step) {
    EXPECT_EQ(GlobalBatch(*resumed, shape, step), batches[step]);
  }
  auto fresh = Counting(41, 11);
  const BatchShape four_ranks{1, kSeq, 1, 4};
  ASSERT_OK(fresh->SetPosition(four_ranks, 0, saved));
  for (int64_t step = 0; step < 5; ++step) {
    EXPECT_EQ(Sorted(GlobalBatch(*fresh, four_ranks, step)),
              Sorted(batches[step + 3]));
  }
  EXPECT_EQ(fresh->PositionAt(four_ranks, 2), (DataPosition{2, 0}));
  // Steps before sample 0 have no samples.
  auto late = Counting(41, 11);
  ASSERT_OK(late->SetPosition(shape, 5, DataPosition{0, 2}));
  std::vector<int32_t> tokens, targets;
  EXPECT_OK(late->Fill(shape, 5, 0, 0, &tokens, &targets));
  EXPECT_THAT(late->Fill(shape, 0, 0, 0, &tokens, &targets),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  // A position outside the data.
  EXPECT_THAT(resumed->SetPosition(shape, 0, DataPosition{0, 10}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("index 10"),
                             HasSubstr("10 samples per epoch"))));
  EXPECT_THAT(resumed->SetPosition(shape, 0, DataPosition{-1, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(TokenBatchesTest, WindowsRunAcrossMegatronDocuments) {
  const std::string prefix = TempPath("docs");
  WriteMegatronDataset(prefix, {{0, 1, 2}, {3}, {4, 5, 6, 7, 8}},
                       TokenDType::kUint16);
  ASSERT_OK_AND_ASSIGN(TokenStream stream, OpenMegatronTokens(prefix));
  ASSERT_OK_AND_ASSIGN(auto source, TokenBatches(std::move(stream), 259, 4, 0));
  EXPECT_EQ(source->samples_per_epoch(), 2);  // (9 - 1) / 4
  std::vector<int32_t> tokens, targets;
  ASSERT_OK(source->Fill({2, 4, 1, 1}, 0, 0, 0, &tokens, &targets));
  std::set<int32_t> firsts = {tokens[0], tokens[4]};
  EXPECT_EQ(firsts, (std::set<int32_t>{0, 4}));
  const int b = tokens[0] == 0 ? 0 : 1;  // the window starting at token 0
  EXPECT_EQ(
      std::vector<int32_t>(tokens.begin() + 4 * b, tokens.begin() + 4 * b + 4),
      (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(targets[4 * b + 3], 4);
}

TEST(TokenBatchesTest, Errors) {
  const std::string path = TempPath("small.bin");
  WriteFileBytes(path, TokenBytes({1, 2, 3, 4}, TokenDType::kUint16));
  ASSERT_OK_AND_ASSIGN(TokenStream small,
                       OpenFlatTokens(path, TokenDType::kUint16));
  EXPECT_THAT(TokenBatches(std::move(small), 259, 4, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path), HasSubstr("holds 4 tokens"),
                             HasSubstr("--seq 4 takes 5"))));
  // An id past the vocabulary fails the sample that holds it, naming the
  // file and byte offset (token 6: byte 12).
  WriteFileBytes(
      path, TokenBytes({1, 2, 3, 4, 5, 6, 999, 8, 9}, TokenDType::kUint16));
  ASSERT_OK_AND_ASSIGN(TokenStream stream,
                       OpenFlatTokens(path, TokenDType::kUint16));
  ASSERT_OK_AND_ASSIGN(auto source, TokenBatches(std::move(stream), 259, 4, 0));
  std::vector<int32_t> tokens, targets;
  EXPECT_THAT(source->Fill({2, 4, 1, 1}, 0, 0, 0, &tokens, &targets),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path), HasSubstr("token id 999"),
                             HasSubstr("byte offset 12"))));
}

}  // namespace
}  // namespace model
}  // namespace zero3
