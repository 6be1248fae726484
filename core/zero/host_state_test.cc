// Copyright 2026 The zero3 Authors.

#include "core/zero/host_state.h"

#include <vector>

#include "core/util/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace zero {
namespace {

using ::zero3::testing::IsOk;

HostPiece Piece(int64_t offset, int64_t elements) {
  HostPiece p;
  p.offset = offset;
  p.elements = elements;
  return p;
}

void Fill(const runtime::BufferSlice& s, float value) {
  float* f = s.As<float>();
  for (int64_t i = 0; i < s.bytes() / 4; ++i) f[i] = value;
}

// Two pieces of 4 elements, the host share starting at element 8 of the
// layout. A flipped piece reads and writes the other set; Settle brings its
// values back into the first set and leaves the unflipped piece alone.
TEST(HostStateTest, FlippedPiecesSettleIntoTheFirstSet) {
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.world_size = 1;
  so.mode = sim::SimMode::kData;
  auto world = sim::SimWorld::Create(so).value();
  ASSERT_THAT(world->Run([](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(
        HostState s,
        HostState::Allocate(rt, 8, runtime::HostMemoryKind::kPinned, true));
    const std::vector<HostPiece> pieces = {Piece(8, 4), Piece(12, 4)};
    s.SetPieces(2);
    for (int p = 0; p < 2; ++p) {
      const HostState::Set first = s.First(4 * p, 4);
      for (const auto& t : {first.master, first.exp_avg, first.exp_avg_sq}) {
        Fill(t, 1.0f + p);
      }
      const HostState::Set other = s.Other(p, 4 * p, 4);
      for (const auto& t : {other.master, other.exp_avg, other.exp_avg_sq}) {
        Fill(t, 10.0f + p);
      }
    }
    EXPECT_EQ(s.Current(0, 0, 4).master.data(), s.First(0, 4).master.data());
    s.Flip(1);
    EXPECT_TRUE(s.in_second(1));
    EXPECT_EQ(s.Current(1, 4, 4).master.data(), s.Other(0, 4, 4).master.data());
    ZR_RETURN_IF_ERROR(s.Settle(rt, pieces, 8, 1, 1));
    EXPECT_FALSE(s.in_second(1));
    const float* master = s.master().All().As<float>();
    const float* exp_avg_sq = s.exp_avg_sq().All().As<float>();
    EXPECT_EQ(master[0], 1.0f);   // piece 0: its own first set
    EXPECT_EQ(master[4], 11.0f);  // piece 1: settled from the second
    EXPECT_EQ(exp_avg_sq[7], 11.0f);
    return absl::OkStatus();
  }),
              IsOk());
}

}  // namespace
}  // namespace zero
}  // namespace zero3
