// Copyright 2026 The zero3 Authors.

#include "tools/cli/calibrate_steps.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/model/data.h"
#include "core/runtime/launcher.h"
#include "core/util/median.h"
#include "core/util/status_macros.h"
#include "tools/cli/internal/launcher_factory.h"
#include "tools/cli/internal/memory_plan.h"

namespace zero3 {
namespace cli {
namespace {

using calibrate::MeasuredStep;
using calibrate::StepCase;

absl::Status NotFitting(const StepCase& c, const absl::Status& why) {
  return absl::Status(
      why.code(),
      absl::StrCat("in-step calibration case ", c.name, " on ", c.gpus,
                   " GPU(s) does not fit: ", why.message(),
                   "\nchoose smaller cases with --fit-model, --fit-batches "
                   "and --judge-batches, or skip the fit with --no-fit"));
}

// The memory preflight of `c` on GPUs (`gpu`; the device part is checked
// on each rank) or against `profile`'s device memory.
absl::StatusOr<internal::MemoryPlan> Preflight(
    const StepCase& c, const sim::HardwareProfile& profile, bool gpu) {
  internal::PlanInput in;
  in.spec = c.spec;
  in.options = c.options;
  in.profile = profile;
  in.gpu = gpu;
  in.data_mode = false;
  in.world_size = c.gpus;
  in.env = internal::MapEnv({{"LOCAL_WORLD_SIZE", absl::StrCat(c.gpus)}});
  ZR_ASSIGN_OR_RETURN(internal::MemoryPlan plan, internal::PlanMemory(in));
  const absl::Status fits = plan.Check();
  if (!fits.ok()) return NotFitting(c, fits);
  return plan;
}

absl::StatusOr<MeasuredStep> RunCase(const StepCase& c, int steps,
                                     const sim::HardwareProfile& profile,
                                     std::ostream* log) {
  ZR_ASSIGN_OR_RETURN(const internal::MemoryPlan plan,
                      Preflight(c, profile, /*gpu=*/true));
  internal::LauncherOptions lo;
  lo.cuda.ranks_in_process = c.gpus;
  lo.cuda.rank.log = log;
  lo.cuda.rank.max_pinned_bytes = plan.max_pinned_bytes;
  lo.cuda.rank.pinned_fallback = plan.pinned_fallback;
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Launcher> launcher,
                      internal::MakeLauncher(internal::Backend::kCuda, lo));
  MeasuredStep m;
  std::vector<double> fwd, bwd, step;  // ms
  auto data = model::SyntheticBatches(c.spec.vocab_size(), 0);
  ZR_RETURN_IF_ERROR(launcher->Run([&](runtime::Runtime& rt) -> absl::Status {
    const absl::Status fits = plan.CheckDeviceOnRank(rt.device());
    if (!fits.ok()) return NotFitting(c, fits);
    ZR_ASSIGN_OR_RETURN(
        auto e, engine::Engine::Create(c.spec, c.options, data.get(), rt));
    for (int s = 0; s < steps; ++s) {
      ZR_ASSIGN_OR_RETURN(const engine::StepStats stats, e->Step());
      if (s > 0 && rt.rank() == 0) {
        fwd.push_back(stats.fwd_ns / 1e6);
        bwd.push_back(stats.bwd_ns / 1e6);
        step.push_back(stats.step_ns / 1e6);
      }
    }
    // One more step with every operation timed, apart from the steps above:
    // the timing's event records fill CUDA's launch queue sooner and move
    // time between the phases.
    ZR_RETURN_IF_ERROR(launcher->StartOpTiming(rt));
    ZR_RETURN_IF_ERROR(e->Step().status());
    ZR_ASSIGN_OR_RETURN(std::vector<runtime::OpTiming> ops,
                        launcher->TakeOpTimings(rt));
    if (rt.rank() == 0) m.ops = std::move(ops);
    return absl::OkStatus();
  }));
  m.fwd_ms = UpperMedian(fwd);
  m.bwd_ms = UpperMedian(bwd);
  m.step_ms = UpperMedian(step);
  m.op_steps = 1;
  return m;
}

}  // namespace

absl::Status PreflightCases(const std::vector<calibrate::StepCase>& cases,
                            const sim::HardwareProfile& profile, bool gpu) {
  for (const StepCase& c : cases) {
    ZR_RETURN_IF_ERROR(Preflight(c, profile, /*gpu=*/false).status());
    if (gpu) ZR_RETURN_IF_ERROR(Preflight(c, profile, /*gpu=*/true).status());
  }
  return absl::OkStatus();
}

calibrate::StepRunner GpuStepRunner(const sim::HardwareProfile& profile,
                                    std::ostream* log) {
  return [profile, log](const StepCase& c,
                        int steps) -> absl::StatusOr<MeasuredStep> {
    if (steps < 2) {
      return absl::InvalidArgumentError("a timed case needs 2 steps or more");
    }
    return RunCase(c, steps, profile, log);
  };
}

}  // namespace cli
}  // namespace zero3
