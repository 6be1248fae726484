// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/jsonl_sink.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/config/json.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {
namespace {

using config::JsonValue;

JsonValue Number(double v) {
  return std::isfinite(v) ? JsonValue::Double(v) : JsonValue::Null();
}

}  // namespace

absl::StatusOr<std::unique_ptr<JsonlSink>> JsonlSink::Create(
    const std::string& path) {
  ZR_ASSIGN_OR_RETURN(OutputFile file, OutputFile::Create(path, "--metrics"));
  return std::unique_ptr<JsonlSink>(new JsonlSink(std::move(file)));
}

std::string StepMetricsJson(const StepMetrics& m) {
  JsonValue o = JsonValue::Object();
  o.Set("step", JsonValue::Int(m.step));
  o.Set("samples", JsonValue::Int(m.samples));
  o.Set("loss", m.loss.has_value() ? Number(*m.loss) : JsonValue::Null());
  o.Set("lr", Number(m.lr));
  o.Set("grad_norm", Number(m.grad_norm));
  o.Set("loss_scale", Number(m.loss_scale));
  o.Set("skipped", JsonValue::Bool(m.skipped));
  o.Set("skip_reason",
        m.skipped ? JsonValue::String(m.skip_reason) : JsonValue::Null());
  // Only with the speculative step (offload_optimizer.super_offload).
  if (m.speculation.has_value()) {
    o.Set("speculation", m.speculation->empty()
                             ? JsonValue::Null()
                             : JsonValue::String(*m.speculation));
  }
  o.Set("tokens", JsonValue::Int(m.tokens));
  o.Set("predicted_tokens", JsonValue::Int(m.predicted_tokens));
  o.Set("eval_loss",
        m.eval_loss.has_value() ? Number(*m.eval_loss) : JsonValue::Null());
  o.Set("eval_ppl",
        m.eval_ppl.has_value() ? Number(*m.eval_ppl) : JsonValue::Null());
  o.Set("tokens_per_s", Number(m.tokens_per_s));
  o.Set("fwd_ms", Number(m.fwd_ms));
  o.Set("bwd_ms", Number(m.bwd_ms));
  o.Set("step_ms", Number(m.step_ms));
  o.Set("total_ms", Number(m.total_ms));
  o.Set("model_flops", Number(m.model_flops));
  o.Set("mfu", Number(m.mfu));
  o.Set("pinned_host_bytes", JsonValue::Int(m.pinned_host_bytes));
  o.Set("device_bytes", JsonValue::Int(m.device_bytes));
  o.Set("device_peak_bytes", JsonValue::Int(m.device_peak_bytes));
  if (m.bound.has_value()) {
    const whatif::StepBound& b = *m.bound;
    o.Set("bound_ms", Number(b.ms()));
    o.Set("bound_reached", Number(b.Reached(m.total_ms)));
    o.Set("bound_device_ms", Number(b.device_ms));
    o.Set("bound_host_ms", Number(b.host_ms));
    o.Set("bound_h2d_ms", Number(b.h2d_ms));
    o.Set("bound_d2h_ms", Number(b.d2h_ms));
    o.Set("bound_comm_ms", Number(b.comm_ms));
    if (b.drive_ms > 0) o.Set("bound_drive_ms", Number(b.drive_ms));
  }
  return config::WriteJson(o, config::JsonStyle::kCompact);
}

absl::Status JsonlSink::Write(const StepMetrics& m) {
  return file_.Append(absl::StrCat(StepMetricsJson(m), "\n"));
}

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
