// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/interrupt.h"

#include <signal.h>

#include "gtest/gtest.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

TEST(StopOnSignalTest, NoSignalNoStop) {
  StopOnSignal stop;
  stop.Arm();
  EXPECT_EQ(stop.signal(), 0);
  EXPECT_FALSE(stop.StopAfter(1));
  EXPECT_FALSE(stop.StopAfter(2));
  EXPECT_EQ(stop.stop_point(), -1);
}

TEST(StopOnSignalTest, RanksStopTogetherAfterTheNextStep) {
  StopOnSignal stop;
  stop.Arm();
  stop.Arm();  // every rank arms it; installed once
  // Rank 1 completed step 3 before the signal and went on.
  EXPECT_FALSE(stop.StopAfter(3));
  ASSERT_EQ(raise(SIGTERM), 0);
  EXPECT_EQ(stop.signal(), SIGTERM);
  // Rank 0 completes step 3 and sees the signal: every rank stops after 4.
  EXPECT_FALSE(stop.StopAfter(3));
  EXPECT_EQ(stop.stop_point(), 4);
  EXPECT_TRUE(stop.StopAfter(4));  // rank 1
  EXPECT_TRUE(stop.StopAfter(4));  // rank 0
}

// Processes of a GPU job stop where their collective says any of them saw
// a signal, whether this one did or not.
TEST(StopOnSignalTest, ProcessesStopWhereTheyAgree) {
  StopOnSignal stop;
  stop.Arm();
  EXPECT_FALSE(stop.StopAgreed(2, false));
  EXPECT_EQ(stop.stop_point(), -1);
  // Another process was signalled during step 3; this one was not.
  EXPECT_TRUE(stop.StopAgreed(3, true));
  EXPECT_EQ(stop.signal(), 0);
  EXPECT_EQ(stop.stop_point(), 3);
}

TEST(StopOnSignalTest, RestoresTheHandlers) {
  struct sigaction before;
  sigaction(SIGINT, nullptr, &before);
  {
    StopOnSignal stop;
    struct sigaction unarmed;
    sigaction(SIGINT, nullptr, &unarmed);
    EXPECT_EQ(unarmed.sa_handler, before.sa_handler);
    stop.Arm();
    struct sigaction during;
    sigaction(SIGINT, nullptr, &during);
    EXPECT_NE(during.sa_handler, before.sa_handler);
  }
  struct sigaction after;
  sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
