// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/auto_flags.h"

#include <cmath>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "tools/cli/flag_limits.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

// `text` of flag --`name`, when given, as an integer in `range` into
// `out`; nothing when the flag was not given.
absl::Status ParseCount(absl::string_view name, const std::string& text,
                        IntRange range, std::optional<int64_t>* out) {
  if (text.empty()) return absl::OkStatus();
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < range.min || v > range.max) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be an integer from ", range.min, " to ",
                     range.max, ", got '", text, "'"));
  }
  *out = v;
  return absl::OkStatus();
}

// Warmup may outlast a run (it continues on resume): up to 2^31 - 1 steps.
constexpr int64_t kMaxWarmupSteps = (int64_t{1} << 31) - 1;

}  // namespace

void AutoFlags::Define(FlagSet& flags) {
  flags.AddString(
      "micro-batch", &micro_batch_, "N",
      absl::StrCat("samples per rank per micro-step, ", kMicroBatchRange.min,
                   " to ", kMicroBatchRange.max,
                   ": sets train_micro_batch_size_per_gpu "
                   "(\"auto\" or absent in --config; default "
                   "without --config: 4)"));
  flags.AddString(
      "accumulation", &accumulation_, "N",
      absl::StrCat("micro-steps per optimizer step, ", kAccumulationRange.min,
                   " to ", kAccumulationRange.max,
                   ": sets gradient_accumulation_steps (\"auto\" "
                   "or absent)"));
  flags.AddString("lr", &lr_, "X",
                  "learning rate: sets optimizer.params.lr (\"auto\" or "
                  "absent) and a scheduler's \"auto\" warmup_max_lr");
  flags.AddString("warmup-steps", &warmup_steps_, "N",
                  "sets the scheduler's warmup_num_steps (\"auto\" or "
                  "absent); --steps fills an \"auto\" total_num_steps");
}

absl::StatusOr<config::AutoValues> AutoFlags::Values(int64_t hidden_size,
                                                     int64_t steps) const {
  config::AutoValues v;
  v.hidden_size = hidden_size;
  v.steps = steps;
  ZR_RETURN_IF_ERROR(ParseCount("micro-batch", micro_batch_, kMicroBatchRange,
                                &v.micro_batch));
  ZR_RETURN_IF_ERROR(ParseCount("accumulation", accumulation_,
                                kAccumulationRange, &v.accumulation));
  // DeepSpeed's schedules require a positive warmup_num_steps.
  ZR_RETURN_IF_ERROR(ParseCount("warmup-steps", warmup_steps_,
                                {1, kMaxWarmupSteps}, &v.warmup_steps));
  if (!lr_.empty()) {
    double lr = 0;
    if (!absl::SimpleAtod(lr_, &lr) || !std::isfinite(lr) || lr < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--lr must be a finite number >= 0, such as 2e-5; got '", lr_, "'"));
    }
    v.lr = lr;
  }
  return v;
}

std::string LrColumn(const zero::ZeroOptions& options,
                     const engine::StepStats& stats) {
  if (options.lr_schedule.type == zero::LrScheduleType::kConstant) return "";
  return absl::StrFormat("  lr %.3e", stats.lr);
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
