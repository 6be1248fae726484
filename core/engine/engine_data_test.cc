// Copyright 2026 The zero3 Authors.
//
// The engine on token files: its data position after some steps, and a bad
// token id stopping the step that reads it.

#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/model/presets.h"
#include "core/model/token_batches.h"
#include "core/model/token_file_writer.h"
#include "core/model/token_stream.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace engine {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

constexpr int kWorld = 2;

// A uint16 token file of `tokens` ids (i * 7 % 259, one of them `bad`).
std::unique_ptr<model::BatchSource> TokenData(int64_t tokens, int64_t seq,
                                              int64_t bad_at = -1) {
  std::vector<int64_t> ids(tokens);
  for (int64_t i = 0; i < tokens; ++i) ids[i] = i * 7 % 259;
  if (bad_at >= 0) ids[bad_at] = 300;
  const std::string path = model::TempPath("engine_tokens.bin");
  model::WriteFileBytes(path,
                        model::TokenBytes(ids, model::TokenDType::kUint16));
  auto stream = model::OpenFlatTokens(path, model::TokenDType::kUint16);
  ZR_CHECK_OK(stream.status());
  auto source = model::TokenBatches(*std::move(stream), 259, seq, 3);
  ZR_CHECK_OK(source.status());
  return *std::move(source);
}

// Runs `steps` steps on kWorld simulated ranks; rank 0's data position
// after each step goes to `positions`.
absl::Status TrainSteps(const model::BatchSource& data,
                        const zero::ZeroOptions& o, int steps,
                        std::vector<model::DataPosition>* positions) {
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.world_size = kWorld;
  so.mode = sim::SimMode::kData;
  ZR_ASSIGN_OR_RETURN(auto world, sim::SimWorld::Create(so));
  const model::ModelSpec spec = model::LoadModelSpec("tiny").value();
  return world->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto e, Engine::Create(spec, o, &data, rt));
    for (int s = 0; s < steps; ++s) {
      ZR_RETURN_IF_ERROR(e->Step().status());
      if (rt.rank() == 0) positions->push_back(e->data_position());
    }
    return absl::OkStatus();
  });
}

zero::ZeroOptions Options() {
  zero::ZeroOptions o;
  o.micro_batch = 2;
  o.seq = 8;
  o.accumulation = 2;
  o.offload_optimizer = true;
  return o;
}

TEST(EngineDataTest, PositionAdvancesByTheGlobalBatch) {
  // (161 - 1) / 8 = 20 samples an epoch; 2 x 2 x 2 = 8 samples a step.
  auto data = TokenData(161, 8);
  std::vector<model::DataPosition> positions;
  ASSERT_OK(TrainSteps(*data, Options(), 3, &positions));
  ASSERT_EQ(positions.size(), 3u);
  EXPECT_EQ(positions[0], (model::DataPosition{0, 8}));
  EXPECT_EQ(positions[1], (model::DataPosition{0, 16}));
  EXPECT_EQ(positions[2], (model::DataPosition{1, 4}));
}

TEST(EngineDataTest, TokenIdPastTheVocabularyStopsTheStep) {
  // Every sample of the one epoch is read in 3 steps (24 >= 20 samples).
  auto data = TokenData(161, 8, /*bad_at=*/77);
  std::vector<model::DataPosition> positions;
  EXPECT_THAT(TrainSteps(*data, Options(), 3, &positions),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("engine_tokens.bin"),
                             HasSubstr("token id 300 at byte offset 154"))));
}

}  // namespace
}  // namespace engine
}  // namespace zero3
