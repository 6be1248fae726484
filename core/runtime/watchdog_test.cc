// Copyright 2026 The zero3 Authors.

#include "core/runtime/watchdog.h"

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Collects what the watchdog fires with.
struct Fired {
  absl::Mutex mu;
  std::vector<std::string> messages;
  absl::Notification first;
  Watchdog::Fire Callback() {
    return [this](const std::string& m) {
      absl::MutexLock lock(&mu);
      messages.push_back(m);
      if (!first.HasBeenNotified()) first.Notify();
    };
  }
  size_t count() {
    absl::MutexLock lock(&mu);
    return messages.size();
  }
};

WatchdogOptions Fast(absl::Duration timeout) {
  WatchdogOptions o;
  o.rank = 3;
  o.timeout = timeout;
  o.poll = absl::Milliseconds(5);
  return o;
}

// A wait past the timeout (a peer that never arrives) fires once, naming
// the rank, the wait, the last collective and the setting to change.
TEST(WatchdogTest, WaitPastTheTimeoutFiresOnceNamingRankWaitAndCollective) {
  Fired fired;
  Watchdog dog(Fast(absl::Milliseconds(50)), fired.Callback());
  dog.Note("L7 all-gather");
  {
    Watchdog::Wait wait = Watchdog::Enter(&dog, "the compute stream of step 2");
    ASSERT_TRUE(fired.first.WaitForNotificationWithTimeout(absl::Seconds(10)));
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(dog.fired());
  ASSERT_EQ(fired.count(), 1u);
  EXPECT_THAT(
      fired.messages[0],
      AllOf(HasSubstr("rank 3"), HasSubstr("the compute stream of step 2"),
            HasSubstr("L7 all-gather"),
            HasSubstr("zero3.collective_timeout_seconds")));
}

// Waits shorter than the timeout, one after another for longer than it in
// total, and the time between waits, never fire; nested waits count from
// the outermost.
TEST(WatchdogTest, ShortWaitsAndIdleTimeDoNotFire) {
  Fired fired;
  Watchdog dog(Fast(absl::Milliseconds(200)), fired.Callback());
  for (int i = 0; i < 6; ++i) {
    Watchdog::Wait outer = Watchdog::Enter(&dog, "outer");
    {
      Watchdog::Wait inner = Watchdog::Enter(&dog, "inner");
      absl::SleepFor(absl::Milliseconds(20));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  absl::SleepFor(absl::Milliseconds(300));  // idle: no wait
  EXPECT_FALSE(dog.fired());
  EXPECT_EQ(fired.count(), 0u);
}

// A probe's error (NCCL's asynchronous error, a lost peer) fires at the
// next poll, with or without a wait, and names the wait when there is one.
TEST(WatchdogTest, ProbeErrorFiresWithItsMessage) {
  Fired fired;
  Watchdog dog(Fast(absl::InfiniteDuration()), fired.Callback());
  absl::Notification broken;
  dog.AddProbe([&]() -> absl::Status {
    if (broken.HasBeenNotified()) {
      return absl::UnavailableError("NCCL: remote process exited");
    }
    return absl::OkStatus();
  });
  Watchdog::Wait wait = Watchdog::Enter(&dog, "the reduce stream");
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(dog.fired());
  broken.Notify();
  ASSERT_TRUE(fired.first.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_THAT(fired.messages[0],
              AllOf(HasSubstr("rank 3"), HasSubstr("remote process exited"),
                    HasSubstr("the reduce stream")));
}

TEST(WatchdogTest, NoWatchdogIsANoOp) {
  Watchdog::Wait wait = Watchdog::Enter(nullptr, "anything");
}

}  // namespace
}  // namespace runtime
}  // namespace zero3
