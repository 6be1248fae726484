// Copyright 2026 The zero3 Authors.
//
// simulate.cc: one variant's step on the simulator, and what its
// timeline says (phase times, exposed copies and collectives, memory).

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "core/engine/engine.h"
#include "core/kernels/op_cost.h"
#include "core/model/data.h"
#include "core/model/transformer.h"
#include "core/runtime/pinned_memory.h"
#include "core/util/status_macros.h"
#include "sim/simulator.h"
#include "tools/whatif/whatif.h"
#include "tools/whatif/whatif_internal.h"

namespace zero3 {
namespace whatif {

namespace internal {
namespace {

// Length of the union of intervals, and of the part not covered by `cover`.
struct Span {
  int64_t start, end;
};

std::vector<Span> Union(std::vector<Span> v) {
  std::sort(v.begin(), v.end(),
            [](const Span& a, const Span& b) { return a.start < b.start; });
  std::vector<Span> out;
  for (const Span& s : v) {
    if (!out.empty() && s.start <= out.back().end) {
      out.back().end = std::max(out.back().end, s.end);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

int64_t UncoveredLength(const std::vector<Span>& spans,
                        const std::vector<Span>& cover) {
  int64_t total = 0;
  size_t j = 0;
  for (const Span& s : spans) {
    int64_t t = s.start;
    while (j < cover.size() && cover[j].end <= t) ++j;
    for (size_t k = j; k < cover.size() && cover[k].start < s.end; ++k) {
      if (cover[k].start > t) total += cover[k].start - t;
      t = std::max(t, cover[k].end);
      if (t >= s.end) break;
    }
    if (t < s.end) total += s.end - t;
  }
  return total;
}

// True for the simulated device's "device out of memory" error.
bool IsDeviceOutOfMemory(const absl::Status& s) {
  return s.code() == absl::StatusCode::kResourceExhausted &&
         absl::StrContains(s.message(), "device out of memory");
}

// The result of a variant that ran out of device memory: its peak need,
// from the same step on a device without a memory limit.
VariantResult NotFitting(StepInput input, const absl::Status& why) {
  VariantResult out;
  DoesNotFit f;
  f.capacity_gib = input.profile.gpu().memory_gib();
  f.message = std::string(why.message());
  input.profile.mutable_gpu()->set_memory_gib(kUnlimitedGiB);
  input.traces = false;
  input.op_timings = false;
  absl::StatusOr<VariantResult> unlimited = SimulateStep(input);
  if (unlimited.ok()) f.need_gib = unlimited->metrics.device_memory_gib;
  out.metrics.device_memory_gib = f.need_gib;
  out.does_not_fit = std::move(f);
  return out;
}

}  // namespace

absl::StatusOr<VariantResult> RunVariant(const Scenario& s, const Variant& v,
                                         const RunOptions& run,
                                         std::vector<std::string>* notices) {
  ZR_ASSIGN_OR_RETURN(Resolved r, Resolve(s, v, run));
  for (const std::string& n : r.notices) {
    if (std::find(notices->begin(), notices->end(), n) == notices->end()) {
      notices->push_back(n);
    }
  }
  StepInput input;
  input.profile = r.profile;
  input.spec = r.spec;
  input.options = r.options;
  input.gpus = static_cast<int>(v.gpus);
  input.steps = std::max(1, s.steps());
  input.full = run.full;
  input.traces = run.traces;
  input.detect_races = run.detect_races;
  if (s.eval_interval() > 0) input.eval_iters = std::max(1, s.eval_iters());
  absl::StatusOr<VariantResult> simulated = SimulateStep(input);
  if (IsDeviceOutOfMemory(simulated.status())) {
    VariantResult out = NotFitting(input, simulated.status());
    out.settings = v.settings;
    return out;
  }
  ZR_ASSIGN_OR_RETURN(VariantResult out, std::move(simulated));
  out.settings = v.settings;
  out.changes_training = zero::HostStepPlanOf(r.options).delayed;
  out.eval_interval = s.eval_interval();
  out.eval_iters = input.eval_iters;
  if (s.save_interval() > 0) {
    CheckpointCostInput c;
    c.profile = r.profile;
    const int gpus = static_cast<int>(v.gpus);
    for (const model::ParamInfo& p : model::ModelParams(r.spec)) {
      c.bytes_per_rank += 12 * ((p.numel() + gpus - 1) / gpus);
    }
    c.ranks_per_node =
        std::max(1, std::min(gpus, r.profile.fabric().gpus_per_node()));
    c.offload = r.options.offload_optimizer;
    c.async = r.checkpoint_async;
    c.interval = s.save_interval();
    c.step_ms = out.metrics.total_ms;
    c.host_optimizer_ms = c.offload ? out.metrics.step_ms : 0;
    out.checkpoint = EstimateCheckpointCost(c);
    out.checkpoint_async = c.async;
  }
  return out;
}

}  // namespace internal

using internal::IsDeviceOutOfMemory;
using internal::kGiB;
using internal::kUnlimitedGiB;
using internal::NotFitting;
using internal::Span;
using internal::UncoveredLength;
using internal::Union;

absl::StatusOr<OffloadedStepChoice> ChooseOffloadedStep(StepInput input) {
  input.traces = false;
  input.op_timings = false;
  input.eval_iters = 0;
  OffloadedStepChoice choice;
  bool found = false;
  const auto try_share = [&](double share) -> absl::Status {
    input.options.device_step_share = share;
    absl::StatusOr<VariantResult> r = SimulateStep(input);
    if (IsDeviceOutOfMemory(r.status())) {
      choice.tried.emplace_back(share, 0);
      return absl::OkStatus();
    }
    ZR_RETURN_IF_ERROR(r.status());
    const double ms = r->metrics.total_ms;
    choice.tried.emplace_back(share, ms);
    if (!found || ms < choice.step_ms) {
      choice.share = share;
      choice.step_ms = ms;
      found = true;
    }
    return absl::OkStatus();
  };
  for (const double share : kOffloadedStepShares) {
    ZR_RETURN_IF_ERROR(try_share(share));
  }
  // Then finer, around the best: the shares a quarter and half a step away.
  const double coarse = choice.share;
  for (const double d :
       {-0.09375, -0.0625, -0.03125, 0.03125, 0.0625, 0.09375}) {
    const double share = coarse + d;
    if (found && share > 0 && share < 1) ZR_RETURN_IF_ERROR(try_share(share));
  }
  if (!found) {
    return absl::ResourceExhaustedError(
        "device out of memory with every share of the offloaded step on the "
        "device (zero3.offloaded_step \"auto\")");
  }
  return choice;
}

std::string DescribeOffloadedStep(const OffloadedStepChoice& choice,
                                  const std::string& profile) {
  std::string line = absl::StrFormat(
      "offloaded step: %g%% of the offloaded optimizer state stepped on the "
      "device (auto: %.1f ms a step on %s",
      100 * choice.share, choice.step_ms, profile);
  for (const auto& [share, ms] : choice.tried) {
    if (ms <= 0 || (share != 0 && share != 1)) continue;
    absl::StrAppendFormat(&line, "; on the %s only %.1f ms",
                          share == 0 ? "host" : "device", ms);
  }
  return line + ")";
}

absl::StatusOr<VariantResult> SimulateStep(const StepInput& in) {
  if (in.options.device_step_share < 0) {
    ZR_ASSIGN_OR_RETURN(const OffloadedStepChoice choice,
                        ChooseOffloadedStep(in));
    StepInput resolved = in;
    resolved.options.device_step_share = choice.share;
    return SimulateStep(resolved);
  }
  sim::SimOptions so;
  so.profile = in.profile;
  so.world_size = in.gpus;
  so.mode = sim::SimMode::kTiming;
  so.detect_races = in.detect_races;
  so.trace = in.traces || in.op_timings;
  // As the CUDA backend times them: between events, which the host pays for.
  const bool ops_apart = in.op_timings && in.op_timings_apart;
  so.op_timing = in.op_timings && !ops_apart;
  so.symmetric = !in.full;
  ZR_ASSIGN_OR_RETURN(auto world, sim::SimWorld::Create(so));
  auto data = model::SyntheticBatches(in.spec.vocab_size(), 0);
  const int steps = std::max(1, in.steps);
  engine::StepStats last;
  runtime::MemoryStats memory;
  runtime::PinnedMemoryStats pinned;
  int64_t step_start = 0;
  int64_t ops_from = 0;  // where the timed operations start
  int64_t eval_ns = -1;  // one evaluation's, rank 0's
  ZR_RETURN_IF_ERROR(world->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(
        auto e, engine::Engine::Create(in.spec, in.options, data.get(), rt));
    for (int i = 0; i < steps; ++i) {
      if (rt.rank() == 0 && i == steps - 1) {
        world->set_record_activity(true);
        step_start = rt.NowNanos();
      }
      ZR_ASSIGN_OR_RETURN(engine::StepStats stats, e->Step());
      if (rt.rank() == 0) last = stats;
    }
    if (rt.rank() == 0) {
      memory = rt.device().memory_stats();
      pinned = rt.pinned_memory().stats();
      ops_from = ops_apart ? rt.NowNanos() : step_start;
      if (ops_apart) world->set_op_timing(true);
    }
    if (ops_apart) ZR_RETURN_IF_ERROR(e->Step().status());
    if (in.eval_iters > 0) {
      const int64_t t0 = rt.NowNanos();
      ZR_RETURN_IF_ERROR(e->Evaluate(*data, in.eval_iters).status());
      if (rt.rank() == 0) eval_ns = rt.NowNanos() - t0;
    }
    return absl::OkStatus();
  }));
  const int64_t step_end = step_start + last.total_ns;
  std::vector<Span> compute, copy, h2d, d2h, comm, drive_read, drive_write;
  int64_t blocked = 0, host_tasks = 0;
  for (const sim::ActivityInterval& a : world->TakeActivity(0)) {
    const Span span{std::max(a.start_ns, step_start),
                    std::min(a.end_ns, step_end)};
    if (span.end <= span.start) continue;
    switch (a.kind) {
      case sim::ActivityInterval::Kind::kCompute:
        compute.push_back(span);
        break;
      case sim::ActivityInterval::Kind::kCopy:
        copy.push_back(span);
        break;
      case sim::ActivityInterval::Kind::kHostToDevice:
        copy.push_back(span);
        h2d.push_back(span);
        break;
      case sim::ActivityInterval::Kind::kDeviceToHost:
        copy.push_back(span);
        d2h.push_back(span);
        break;
      case sim::ActivityInterval::Kind::kHostTask:
        host_tasks += span.end - span.start;
        break;
      case sim::ActivityInterval::Kind::kCollective:
        comm.push_back(span);
        break;
      case sim::ActivityInterval::Kind::kHostBlocked:
        blocked += span.end - span.start;
        break;
      case sim::ActivityInterval::Kind::kDriveRead:
        drive_read.push_back(span);
        break;
      case sim::ActivityInterval::Kind::kDriveWrite:
        drive_write.push_back(span);
        break;
    }
  }
  const std::vector<Span> kernels = Union(compute);
  VariantResult out;
  out.device_step_share = in.options.device_step_share;
  Metrics& m = out.metrics;
  m.fwd_ms = last.fwd_ns / 1e6;
  m.bwd_ms = last.bwd_ns / 1e6;
  m.step_ms = last.step_ns / 1e6;
  m.total_ms = last.total_ns / 1e6;
  m.tokens_per_s = last.global_tokens / (last.total_ns / 1e9);
  m.exposed_copy_ms = UncoveredLength(Union(copy), kernels) / 1e6;
  m.exposed_comm_ms = UncoveredLength(Union(comm), kernels) / 1e6;
  m.host_blocked_ms = blocked / 1e6;
  m.bound.device_ms = UncoveredLength(kernels, {}) / 1e6;
  m.bound.host_ms = host_tasks / 1e6;
  m.bound.h2d_ms = UncoveredLength(Union(h2d), {}) / 1e6;
  m.bound.d2h_ms = UncoveredLength(Union(d2h), {}) / 1e6;
  m.bound.comm_ms = UncoveredLength(Union(comm), {}) / 1e6;
  m.bound.drive_ms = std::max(UncoveredLength(Union(drive_read), {}),
                              UncoveredLength(Union(drive_write), {})) /
                     1e6;
  m.device_memory_gib = memory.peak_bytes_in_use / kGiB;
  m.pinned_host_gib = pinned.peak_bytes / kGiB;
  out.simulated_ops = world->total_ops();
  if (eval_ns >= 0) out.eval_ms = eval_ns / 1e6;
  if (in.traces) out.trace_json = world->trace().ToJson();
  if (in.op_timings) {
    // Copies, memsets and kernels between their events; the collectives
    // (which the CUDA backend does not time) from the trace, as they ran.
    for (runtime::OpTiming& op : world->TakeOpTimings(0)) {
      if (op.start_ns >= ops_from) out.ops.push_back(std::move(op));
    }
    const sim::Trace& trace = world->trace();
    for (const sim::Trace::Span& span : trace.spans()) {
      if (span.pid != 0 || span.start_ns < ops_from) continue;
      // Host tasks too, as the CUDA backend's op timing reports them (not
      // the host's staging of copies, which it cannot see).
      if (span.category == "host task") {
        out.ops.push_back({"host", span.name, span.start_ns, span.end_ns});
        continue;
      }
      const std::string track = trace.TrackName(span.pid, span.tid);
      constexpr absl::string_view kStream = "stream: ";
      if (span.category != "collective" || !absl::StartsWith(track, kStream)) {
        continue;
      }
      out.ops.push_back({track.substr(kStream.size()), span.name, span.start_ns,
                         span.end_ns, span.kind});
    }
    std::stable_sort(
        out.ops.begin(), out.ops.end(),
        [](const runtime::OpTiming& a, const runtime::OpTiming& b) {
          return a.start_ns < b.start_ns;
        });
  }
  return out;
}

}  // namespace whatif
}  // namespace zero3
