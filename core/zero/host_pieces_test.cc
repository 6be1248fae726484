// Copyright 2026 The zero3 Authors.

#include "core/zero/host_pieces.h"

#include <vector>

#include "gtest/gtest.h"

namespace zero3 {
namespace zero {
namespace {

ParamRange Range(int64_t offset, int64_t elements) {
  ParamRange r;
  r.offset = offset;
  r.elements = elements;
  return r;
}

// Sub-group 0 is the device share's; sub-group 1, [100, 350), is cut into
// pieces of 100. Buckets come from the end of the layout: a piece is on the
// host with the bucket holding its first element.
TEST(HostPiecesTest, TheHostShareInPiecesWithTheirBucketsAndDecay) {
  const std::vector<ParamRange> groups = {Range(0, 100), Range(100, 250)};
  const std::vector<std::vector<DecayRun>> runs = {
      {{0, 100, 0.1f}}, {{100, 150, 0.1f}, {250, 100, 0.0f}}};
  const std::vector<ParamRange> buckets = {Range(300, 50), Range(150, 150),
                                           Range(0, 150)};
  const std::vector<HostPiece> pieces =
      PlanHostPieces(groups, runs, /*host_begin=*/100, 100, buckets);
  ASSERT_EQ(pieces.size(), 3u);
  const int64_t offsets[] = {100, 200, 300}, sizes[] = {100, 100, 50};
  const int ready[] = {2, 1, 0};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(pieces[i].offset, offsets[i]);
    EXPECT_EQ(pieces[i].elements, sizes[i]);
    EXPECT_EQ(pieces[i].ready_bucket, ready[i]) << "piece " << i;
    EXPECT_EQ(pieces[i].name, "sub-group 1 part " + std::to_string(i));
  }
  // The middle piece straddles the change of decay.
  ASSERT_EQ(pieces[1].runs.size(), 2u);
  EXPECT_EQ(pieces[1].runs[0].offset, 200);
  EXPECT_EQ(pieces[1].runs[0].elements, 50);
  EXPECT_EQ(pieces[1].runs[0].weight_decay, 0.1f);
  EXPECT_EQ(pieces[1].runs[1].offset, 250);
  EXPECT_EQ(pieces[1].runs[1].weight_decay, 0.0f);
}

TEST(HostPiecesTest, ASubGroupThatFitsIsOnePieceNamedByItsGroup) {
  const std::vector<HostPiece> pieces = PlanHostPieces(
      {Range(0, 64)}, {{{0, 64, 0.0f}}}, 0, 1 << 20, {Range(0, 64)});
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].name, "sub-group 0");
  EXPECT_EQ(pieces[0].elements, 64);
  EXPECT_EQ(pieces[0].ready_bucket, 0);
}

}  // namespace
}  // namespace zero
}  // namespace zero3
