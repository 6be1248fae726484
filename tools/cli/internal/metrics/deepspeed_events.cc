// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/deepspeed_events.h"

#include <cmath>

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {
namespace {

constexpr char kLoss[] = "Train/Samples/train_loss";
constexpr char kLr[] = "Train/Samples/lr";
constexpr char kLossScale[] = "Train/Samples/loss_scale";
constexpr char kForward[] = "Train/Samples/elapsed_time_ms_forward";
constexpr char kBackward[] = "Train/Samples/elapsed_time_ms_backward";
constexpr char kStep[] = "Train/Samples/elapsed_time_ms_step";
// zero3's own, under DeepSpeed's prefix.
constexpr char kGradNorm[] = "Train/Samples/grad_norm";
constexpr char kTokensPerS[] = "Train/Samples/tokens_per_s";
constexpr char kMfu[] = "Train/Samples/mfu";
constexpr char kEvalLoss[] = "Train/Samples/eval_loss";
constexpr char kEvalPpl[] = "Train/Samples/eval_ppl";

}  // namespace

std::vector<std::string> DeepSpeedTags(const EventOptions& options) {
  std::vector<std::string> tags;
  if (options.has_loss) tags.push_back(kLoss);
  tags.push_back(kLr);
  if (options.fp16) tags.push_back(kLossScale);
  for (const char* t : {kForward, kBackward, kStep}) tags.push_back(t);
  if (options.has_loss) tags.push_back(kGradNorm);
  for (const char* t : {kTokensPerS, kMfu}) tags.push_back(t);
  if (options.has_eval) {
    for (const char* t : {kEvalLoss, kEvalPpl}) tags.push_back(t);
  }
  return tags;
}

std::vector<ScalarEvent> DeepSpeedEvents(const StepMetrics& m,
                                         const EventOptions& options) {
  std::vector<ScalarEvent> events;
  const int64_t x = m.samples;
  if (options.has_loss && m.loss.has_value()) {
    events.push_back({kLoss, *m.loss, m.samples_before});
  }
  events.push_back({kLr, m.lr, x});
  if (options.fp16) events.push_back({kLossScale, m.loss_scale, x});
  events.push_back({kForward, m.fwd_ms, x});
  events.push_back({kBackward, m.bwd_ms, x});
  events.push_back({kStep, m.step_ms, x});
  if (options.has_loss && !std::isnan(m.grad_norm)) {
    events.push_back({kGradNorm, m.grad_norm, x});
  }
  events.push_back({kTokensPerS, m.tokens_per_s, x});
  events.push_back({kMfu, m.mfu, x});
  if (options.has_eval && m.eval_loss.has_value()) {
    events.push_back({kEvalLoss, *m.eval_loss, x});
    events.push_back({kEvalPpl, m.eval_ppl.value_or(0), x});
  }
  return events;
}

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
