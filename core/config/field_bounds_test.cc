// Copyright 2026 The zero3 Authors.

#include "core/config/field_bounds.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "core/config/config.pb.h"
#include "core/config/diagnostics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace config {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Errors(const Config& config) {
  Diagnostics diag;
  CheckFieldBounds(config, &diag, [](const std::string&) {});
  const absl::Status status = diag.ToStatus();
  if (status.ok()) return {};
  return absl::StrSplit(std::string(status.message()), '\n');
}

TEST(CheckFieldBoundsTest, DefaultsAreInBounds) {
  EXPECT_THAT(Errors(Config()), IsEmpty());
}

TEST(CheckFieldBoundsTest, ReportsEachKindOfBound) {
  Config config;
  config.mutable_fp16()->set_initial_scale_power(128);
  config.mutable_optimizer()->mutable_params()->set_eps(0);
  config.mutable_zero_optimization()->set_reduce_bucket_size(-2);
  config.mutable_zero_optimization()->mutable_offload_optimizer()->set_ratio(
      std::numeric_limits<double>::infinity());
  EXPECT_THAT(
      Errors(config),
      ElementsAre(
          "fp16.initial_scale_power: must be in [0, 127] (the initial scale "
          "2^initial_scale_power must be a finite fp32 number), found 128",
          "optimizer.params.eps: must be > 0 (it keeps the update's "
          "denominator away from zero), found 0.0",
          "zero_optimization.reduce_bucket_size: must be >= 0, found -2 "
          "(elements per gradient bucket)",
          "zero_optimization.offload_optimizer.ratio: must be a finite "
          "number, found inf"));
}

TEST(CheckFieldBoundsTest, SkipsPoisonedPaths) {
  Config config;
  config.mutable_optimizer()->mutable_params()->set_eps(0);
  Diagnostics diag;
  diag.Poison("optimizer.params.eps");
  CheckFieldBounds(config, &diag, [](const std::string&) {});
  EXPECT_FALSE(diag.has_errors());
}

TEST(CheckFieldBoundsTest, CallsBackAfterEachFieldAndSection) {
  std::vector<std::string> paths;
  Diagnostics diag;
  CheckFieldBounds(Config(), &diag,
                   [&](const std::string& path) { paths.push_back(path); });
  auto index = [&](const std::string& path) {
    for (size_t i = 0; i < paths.size(); ++i) {
      if (paths[i] == path) return static_cast<int>(i);
    }
    return -1;
  };
  EXPECT_EQ(index("train_batch_size"), 0);
  EXPECT_LT(index("fp16.enabled"), index("fp16.loss_scale"));
  EXPECT_LT(index("fp16.min_loss_scale"), index("fp16"));
  EXPECT_LT(index("fp16"), index("optimizer.type"));
  EXPECT_LT(index("zero_optimization.offload_param.max_in_cpu"),
            index("zero_optimization"));
  EXPECT_LT(index("zero3"), index("scheduler"));
  EXPECT_LT(index("scheduler"), index("steps_per_print"));
  EXPECT_LT(index("tensorboard"), index("activation_checkpointing"));
  EXPECT_LT(index("activation_checkpointing"), index("aio"));
  EXPECT_EQ(paths.back(), "aio");
}

}  // namespace
}  // namespace config
}  // namespace zero3
