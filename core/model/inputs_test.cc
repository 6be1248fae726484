// Copyright 2026 The zero3 Authors.

#include "core/model/inputs.h"

#include <cstring>
#include <memory>
#include <vector>

#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace model {
namespace {

using ::zero3::testing::IsOk;

TEST(InputStagerTest, StagesTheMicroBatchOnTheDeviceAndFreesItsBuffers) {
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.mode = sim::SimMode::kData;
  auto world = sim::SimWorld::Create(so);
  ZR_CHECK_OK(world.status());
  const BatchShape shape{/*batch=*/2, /*seq=*/5, /*accumulation=*/2,
                         /*world=*/3};
  const int64_t t = shape.batch * shape.seq;
  auto data = SyntheticBatches(50, 7);
  std::vector<int32_t> tokens, targets;
  ASSERT_OK(data->Fill(shape, 4, 1, 2, &tokens, &targets));
  EXPECT_THAT((*world)->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto stream, rt.device().CreateStream("s"));
    {
      ZR_ASSIGN_OR_RETURN(
          InputStager stager,
          InputStager::Create(rt, t, "staging", "inputs", "inputs H2D"));
      // Tokens, targets and room for packed documents' positions.
      EXPECT_EQ(rt.pinned_memory().stats().bytes_in_use, 3 * t * 4);
      ZR_RETURN_IF_ERROR(stager.Stage(*stream, *data, shape, 4, 1, 2, "fill"));
      ZR_RETURN_IF_ERROR(stream->Synchronize());
      EXPECT_EQ(stager.tokens().bytes(), t * 4);
      EXPECT_EQ(std::memcmp(stager.tokens().data(), tokens.data(), t * 4), 0);
      EXPECT_EQ(std::memcmp(stager.targets().data(), targets.data(), t * 4), 0);
      // Data that does not pack stages no positions.
      EXPECT_EQ(stager.positions().bytes(), 0);
    }
    EXPECT_EQ(rt.pinned_memory().stats().bytes_in_use, 0);
    EXPECT_EQ(rt.device().memory_stats().allocations, 0);
    return absl::OkStatus();
  }),
              IsOk());
  EXPECT_TRUE((*world)->races().empty());
}

}  // namespace
}  // namespace model
}  // namespace zero3
