// Copyright 2026 The zero3 Authors.

#include "sim/internal/fiber.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace zero3 {
namespace sim {
namespace internal {
namespace {

TEST(FiberTest, SuspendAndResumeInterleave) {
  std::string log;
  std::unique_ptr<Fiber> a, b;
  a = *Fiber::Create([&] {
    log += "a1 ";
    a->Suspend();
    log += "a2 ";
  });
  b = *Fiber::Create([&] {
    log += "b1 ";
    b->Suspend();
    log += "b2 ";
  });
  a->Resume();
  b->Resume();
  EXPECT_FALSE(a->finished());
  b->Resume();
  EXPECT_TRUE(b->finished());
  a->Resume();
  EXPECT_TRUE(a->finished());
  EXPECT_EQ(log, "a1 b1 b2 a2 ");
}

// Locals on a fiber's stack survive its suspensions.
int Depth(Fiber* self, int n) {
  volatile int frame[1024];
  frame[0] = n;
  if (n == 0) {
    self->Suspend();
    return frame[0];
  }
  return Depth(self, n - 1) + frame[0];
}

TEST(FiberTest, DeepStackKeepsItsFrames) {
  int result = -1;
  std::unique_ptr<Fiber> f;
  f = *Fiber::Create([&] { result = Depth(f.get(), 1000); });
  f->Resume();
  EXPECT_EQ(result, -1);
  f->Resume();
  EXPECT_EQ(result, 1000 * 1001 / 2);
}

TEST(FiberTest, ThousandsOfFibersAtOnce) {
  const int n = 4096;
  std::vector<std::unique_ptr<Fiber>> fibers(n);
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    fibers[i] = *Fiber::Create([&, i] {
      fibers[i]->Suspend();
      sum += i;
    });
    fibers[i]->Resume();
  }
  for (auto& f : fibers) f->Resume();
  EXPECT_EQ(sum, int64_t{n} * (n - 1) / 2);
}

}  // namespace
}  // namespace internal
}  // namespace sim
}  // namespace zero3
