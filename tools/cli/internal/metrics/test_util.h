// Copyright 2026 The zero3 Authors.
//
// test_util.h: what the sink tests share: a fresh directory under the test's
// temporary directory, a file's bytes, and two steps of metrics.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_METRICS_TEST_UTIL_H_
#define ZERO3_TOOLS_CLI_INTERNAL_METRICS_TEST_UTIL_H_

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "tools/cli/internal/metrics/step_metrics.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

// `name` under $TEST_TMPDIR, removed if it exists.
inline std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Step `step` of a run with 16 samples per step; `with_loss` false is what
// timing mode reports (no loss, unknown gradient norm).
inline StepMetrics TestStep(int64_t step, bool with_loss) {
  StepMetrics m;
  m.step = step;
  m.samples = 16 * step;
  m.samples_before = 16 * (step - 1);
  if (with_loss) m.loss = 5.5 - step;
  m.lr = 1e-3;
  m.grad_norm =
      with_loss ? 0.25 * step : std::numeric_limits<double>::quiet_NaN();
  m.loss_scale = 65536;
  m.skipped = step == 2;
  if (m.skipped) m.skip_reason = "gradient overflow";
  m.tokens = 1024;
  m.predicted_tokens = 600 + step;
  if (step == 2) {
    m.eval_loss = 2.0;
    m.eval_ppl = std::exp(2.0);
  }
  m.tokens_per_s = 12600.5;
  m.fwd_ms = 1.5 * step;
  m.bwd_ms = 3.25;
  m.step_ms = 0.125;
  m.total_ms = 4.875;
  m.model_flops = 6.5e12;
  m.mfu = 0.375;
  m.pinned_host_bytes = 1 << 20;
  m.device_bytes = 3 << 20;
  m.device_peak_bytes = 5 << 20;
  return m;
}

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_METRICS_TEST_UTIL_H_
