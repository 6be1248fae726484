// Copyright 2026 The zero3 Authors.

#include "core/config/validate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "core/config/batch.h"
#include "core/config/field_bounds.h"
#include "core/config/json.h"
#include "core/config/modes.h"
#include "core/config/scheduler.h"
#include "core/config/schema.h"
#include "core/util/suggest.h"

namespace zero3 {
namespace config {
namespace {

std::string Quote(absl::string_view s) { return QuoteShort(s); }

// "; did you mean "x"?" when `value` is near one of `names`, else "".
std::string DidYouMean(const std::string& value,
                       const std::vector<std::string>& names) {
  // The names are short: a long value is near none of them, and comparing
  // it with each would cost its length times theirs.
  if (value.size() > 64) return "";
  const std::string near = NearestName(value, names);
  return near.empty() ? "" : absl::StrCat("; did you mean ", Quote(near), "?");
}

void CheckPrecision(const Config& config, Diagnostics* diag) {
  diag->Check(!(config.bf16().enabled() && config.fp16().enabled()),
              "fp16.enabled",
              "bf16.enabled and fp16.enabled are both true; enable at most "
              "one of them");
}

// As DeepSpeed, these are checked only where dynamic scaling uses them.
void CheckDynamicLossScaling(const Fp16& fp16, Diagnostics* diag) {
  if (!fp16.enabled() || fp16.loss_scale() != 0) return;
  diag->Check(fp16.loss_scale_window() >= 1, "fp16.loss_scale_window",
              absl::StrCat("must be >= 1 with dynamic loss scaling, found ",
                           fp16.loss_scale_window()));
  diag->Check(fp16.min_loss_scale() >= 1, "fp16.min_loss_scale",
              absl::StrCat("must be >= 1 with dynamic loss scaling, found ",
                           fp16.min_loss_scale()));
  diag->Check(fp16.hysteresis() >= 1, "fp16.hysteresis",
              absl::StrCat("must be >= 1 with dynamic loss scaling, found ",
                           fp16.hysteresis(),
                           " (DeepSpeed takes 0 but then never lowers the "
                           "scale after an overflow, skipping every step; "
                           "1 lowers it at the first)"));
}

// Values DeepSpeed takes that act as something else: said once, kept.
void NoteNegativeClipping(const Config& config, Diagnostics* diag) {
  if (config.gradient_clipping() >= 0) return;
  diag->Notice("gradient_clipping",
               absl::StrCat(config.gradient_clipping(),
                            " turns clipping off, as 0 does (DeepSpeed clips "
                            "only above 0)"));
}

void NoteNegativeWeightDecay(const AdamParams& params, Diagnostics* diag) {
  if (params.weight_decay() >= 0) return;
  diag->Notice("optimizer.params.weight_decay",
               absl::StrCat(params.weight_decay(),
                            " means no weight decay: DeepSpeed's CPU Adam "
                            "applies only a positive one, and zero3 does the "
                            "same (torch.optim.AdamW refuses it)"));
}

void CheckOptimizerType(const Optimizer& optimizer, Diagnostics* diag) {
  if (optimizer.type() == "Adam" || optimizer.type() == "AdamW") return;
  diag->Check(false, "optimizer.type",
              absl::StrCat(Quote(optimizer.type()),
                           " is not implemented: zero3 implements \"Adam\" "
                           "and \"AdamW\"",
                           DidYouMean(optimizer.type(), {"Adam", "AdamW"})));
}

void CheckBetas(const AdamParams& params, Diagnostics* diag) {
  if (params.betas_size() != 2) {
    diag->Check(false, "optimizer.params.betas",
                absl::StrCat("needs exactly two values [beta1, beta2], such "
                             "as [0.9, 0.999]; found ",
                             params.betas_size()));
    return;
  }
  for (int i = 0; i < 2; ++i) {
    const double b = params.betas(i);
    diag->Check(
        std::isfinite(b) && b >= 0 && b < 1, "optimizer.params.betas",
        absl::StrCat("beta", i + 1, " must be in [0, 1), found ",
                     std::isfinite(b) ? FormatJsonDouble(b) : absl::StrCat(b)));
  }
}

void CheckStage(const ZeroOptimization& zero, Diagnostics* diag) {
  diag->Check(
      zero.stage() == 3, "zero_optimization.stage",
      absl::StrCat("zero3 implements ZeRO stage 3 only, found ", zero.stage(),
                   "; set \"stage\": 3 or remove the key (zero3's "
                   "default is 3)"));
}

void CheckDevice(const std::string& device, const std::string& path,
                 Diagnostics* diag) {
  if (device == "none" || device == "cpu" || device == "nvme") return;
  diag->Check(
      false, path,
      absl::StrCat("must be \"none\", \"cpu\" or \"nvme\", found ",
                   Quote(device), DidYouMean(device, {"none", "cpu", "nvme"})));
}

// The optimizer state or the parameters on NVMe: a directory to swap to.
void CheckNvme(const Config& config, Diagnostics* diag) {
  const OffloadOptimizer& o = config.zero_optimization().offload_optimizer();
  if (o.device() == "nvme") {
    diag->Check(!o.nvme_path().empty(),
                "zero_optimization.offload_optimizer.nvme_path",
                "needed with device \"nvme\": the directory on the drive to "
                "swap the optimizer state to (DeepSpeed's docs use "
                "/local_nvme)");
  }
  const OffloadParam& p = config.zero_optimization().offload_param();
  if (p.device() == "nvme") {
    diag->Check(!p.nvme_path().empty(),
                "zero_optimization.offload_param.nvme_path",
                "needed with device \"nvme\": the directory on the drive to "
                "swap the parameters to (DeepSpeed's docs use /local_nvme)");
    diag->Check(p.buffer_count() >= 2,
                "zero_optimization.offload_param.buffer_count",
                absl::StrCat("must be at least 2 with device \"nvme\" (one "
                             "partition read ahead while another goes to the "
                             "device), found ",
                             p.buffer_count()));
  }
}

// A host share below 1 keeps part of the optimizer on the device, which
// the host parameter shard of offload_param cannot feed.
void CheckOffloadRatio(const ZeroOptimization& zero, const Zero3& zero3,
                       Diagnostics* diag) {
  const bool partial =
      zero.offload_optimizer().ratio() < 1 || zero3.auto_offload_ratio();
  if (!partial || zero.offload_param().device() == "none") return;
  diag->Check(false, "zero_optimization.offload_optimizer.ratio",
              "a ratio below 1 (or \"auto\") needs offload_param.device "
              "\"none\": the device share of the optimizer updates "
              "parameters that offload_param keeps on the host; set ratio "
              "to 1 or turn offload_param off");
}

// `key` (super_offload, or host_step_overlap "forward"), `asked` for where
// the host step cannot move: a notice that it `stays` as it is.
void CheckHostStepMoves(const Config& config, bool asked,
                        const std::string& key, absl::string_view stays,
                        Diagnostics* diag) {
  if (!asked) return;
  const char* why = HostStepCannotMove(config);
  if (why != nullptr) diag->Notice(key, absl::StrCat(stays, ": ", why));
}

// A string key that takes one of `choices`.
void CheckChoice(const std::string& value,
                 const std::vector<std::string>& choices,
                 const std::string& key, Diagnostics* diag) {
  for (const std::string& c : choices) {
    if (value == c) return;
  }
  std::string list;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) list += i + 1 == choices.size() ? " or " : ", ";
    list += Quote(choices[i]);
  }
  diag->Check(false, key,
              absl::StrCat("must be ", list, ", found ", Quote(value),
                           DidYouMean(value, choices)));
}

// OneCycle's bounds (DeepSpeed's constructor needs both lrs), and momentum
// that must stay a valid Adam beta1.
void CheckOneCycle(const SchedulerParams& p, Diagnostics* diag) {
  for (const auto& [given, key] :
       {std::pair<bool, const char*>{p.has_cycle_min_lr(), "cycle_min_lr"},
        {p.has_cycle_max_lr(), "cycle_max_lr"}}) {
    diag->Check(given, absl::StrCat("scheduler.params.", key),
                "missing: OneCycle needs cycle_min_lr and cycle_max_lr, as "
                "DeepSpeed's constructor does");
  }
  if (!p.cycle_momentum()) return;
  diag->Check(p.cycle_min_mom() < 1 && p.cycle_max_mom() < 1,
              "scheduler.params.cycle_max_mom",
              "cycle_min_mom and cycle_max_mom become Adam's beta1, which "
              "must be below 1");
  diag->Check(p.decay_mom_rate() == 0 || p.decay_step_size() == 0,
              "scheduler.params.decay_mom_rate",
              absl::StrCat("must be 0 with cycle_momentum: after the cycle "
                           "DeepSpeed multiplies beta1 by (1 + ",
                           p.decay_mom_rate(),
                           " * steps / decay_step_size), which passes 1 and "
                           "makes Adam diverge; set cycle_momentum false or "
                           "decay_mom_rate 0"));
}

// The scheduler's type, its parameters against the type, and the values
// DeepSpeed checks or warns about.
void CheckScheduler(const Config& config, Diagnostics* diag) {
  if (!config.has_scheduler()) return;
  const Scheduler& sched = config.scheduler();
  const std::vector<std::string>& types = SchedulerTypes();
  std::vector<std::string> quoted;
  for (const std::string& t : types) quoted.push_back(Quote(t));
  const std::string list = absl::StrJoin(quoted, ", ");
  if (!sched.has_type()) {
    diag->Check(
        false, "scheduler.type",
        absl::StrCat("missing: the scheduler section needs a type, ", list,
                     "; remove the section to train at the constant "
                     "optimizer.params.lr"));
    return;
  }
  const std::vector<std::string> names = SchedulerParamNames(sched.type());
  if (names.empty()) {
    diag->Check(false, "scheduler.type",
                absl::StrCat(Quote(sched.type()),
                             " is not one of DeepSpeed's schedules: ", list,
                             DidYouMean(sched.type(), types)));
    return;
  }
  const SchedulerParams& p = sched.params();
  const google::protobuf::Descriptor* d = SchedulerParams::descriptor();
  const google::protobuf::Reflection* r = p.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (!r->HasField(p, f) ||
        std::find(names.begin(), names.end(), f->name()) != names.end()) {
      continue;
    }
    diag->Check(false, absl::StrCat("scheduler.params.", f->name()),
                absl::StrCat(sched.type(), " takes no ", f->name(),
                             " (DeepSpeed would fail to build it); its "
                             "parameters are ",
                             absl::StrJoin(names, ", ")));
  }
  const bool decays =
      std::find(names.begin(), names.end(), "total_num_steps") != names.end();
  diag->Check(!decays || p.has_total_num_steps(),
              "scheduler.params.total_num_steps",
              absl::StrCat("missing: ", sched.type(),
                           " needs the step where its decay ends, as in "
                           "DeepSpeed; give a number, or \"auto\" for "
                           "zero3 train's --steps"));
  if (sched.type() == "OneCycle") CheckOneCycle(p, diag);
  if (p.has_warmup_num_steps() && p.warmup_num_steps() == 0) {
    diag->Notice("scheduler.params.warmup_num_steps",
                 "0 acts as 2, as in DeepSpeed: the first step runs at the "
                 "warmup's start (warmup_min_lr, or 0 for WarmupCosineLR), "
                 "the second at the full rate");
  }
  const std::string& warmup = p.warmup_type();
  if (warmup != "log" && warmup != "linear") {
    diag->Check(
        false, "scheduler.params.warmup_type",
        absl::StrCat("must be \"log\" or \"linear\", found ", Quote(warmup),
                     DidYouMean(warmup, {"log", "linear"}),
                     " (DeepSpeed would use \"log\" instead, with a "
                     "warning)"));
  }
}

}  // namespace

const char* HostStepCannotMove(const Config& config) {
  return PlanHostStep(HostStepAskOf(ModesOf(config))).cannot_move;
}

void Validate(const Config& config, int64_t world_size, Diagnostics* diag) {
  const ZeroOptimization& zero = config.zero_optimization();
  // Each rule runs right after the field (or section) it reports on.
  const absl::flat_hash_map<std::string, std::function<void()>> rules = {
      {"train_batch_size", [&] { CheckBatch(config, world_size, diag); }},
      {"fp16.enabled", [&] { CheckPrecision(config, diag); }},
      {"fp16", [&] { CheckDynamicLossScaling(config.fp16(), diag); }},
      {"optimizer.type", [&] { CheckOptimizerType(config.optimizer(), diag); }},
      {"optimizer.params",
       [&] { CheckBetas(config.optimizer().params(), diag); }},
      {"optimizer.params.weight_decay",
       [&] { NoteNegativeWeightDecay(config.optimizer().params(), diag); }},
      {"gradient_clipping", [&] { NoteNegativeClipping(config, diag); }},
      {"zero_optimization.stage", [&] { CheckStage(zero, diag); }},
      {"zero_optimization.offload_optimizer.device",
       [&] {
         CheckDevice(zero.offload_optimizer().device(),
                     "zero_optimization.offload_optimizer.device", diag);
         CheckNvme(config, diag);
       }},
      {"zero_optimization.offload_param.device",
       [&] {
         CheckDevice(zero.offload_param().device(),
                     "zero_optimization.offload_param.device", diag);
       }},
      {"zero3.grad_offload",
       [&] {
         CheckChoice(config.zero3().grad_offload(), {"async", "blocking"},
                     "zero3.grad_offload", diag);
       }},
      {"zero3.checkpoint_write",
       [&] {
         CheckChoice(config.zero3().checkpoint_write(), {"async", "blocking"},
                     "zero3.checkpoint_write", diag);
       }},
      {"zero3.checkpoint_on_failure",
       [&] {
         CheckChoice(config.zero3().checkpoint_on_failure(),
                     {"stop", "continue"}, "zero3.checkpoint_on_failure", diag);
       }},
      {"zero3.grad_offload_copy",
       [&] {
         CheckChoice(config.zero3().grad_offload_copy(),
                     {"bucketed", "per_param_fp32"}, "zero3.grad_offload_copy",
                     diag);
       }},
      {"zero3.host_step_overlap",
       [&] {
         CheckChoice(config.zero3().host_step_overlap(),
                     {"none", "forward", "delayed"}, "zero3.host_step_overlap",
                     diag);
         CheckHostStepMoves(
             config,
             ModesOf(config).host_step_overlap != HostStepOverlap::kNone,
             "zero3.host_step_overlap",
             "the host step stays at the end of the step", diag);
       }},
      {"zero3.auto_offload_ratio",
       [&] { CheckOffloadRatio(zero, config.zero3(), diag); }},
      {"zero3.offloaded_step",
       [&] {
         CheckChoice(config.zero3().offloaded_step(),
                     {"host", "device", "auto"}, "zero3.offloaded_step", diag);
         const char* why = OffloadedStepStaysOnHost(config);
         if (why != nullptr) {
           diag->Notice("zero3.offloaded_step",
                        absl::StrCat("the step stays on the host: ", why));
         }
       }},
      {"zero3.pinned_fallback",
       [&] {
         CheckChoice(config.zero3().pinned_fallback(), {"error", "pageable"},
                     "zero3.pinned_fallback", diag);
       }},
      {"zero_optimization.offload_optimizer.super_offload",
       [&] {
         CheckHostStepMoves(config, zero.offload_optimizer().super_offload(),
                            "zero_optimization.offload_optimizer.super_offload",
                            "the speculative host step stays off", diag);
         const HostStepPlan plan = PlanHostStep(HostStepAskOf(ModesOf(config)));
         if (zero.offload_optimizer().super_offload() && plan.delayed) {
           diag->Notice("zero_optimization.offload_optimizer.super_offload",
                        "the speculative host step stays off: "
                        "zero3.host_step_overlap \"delayed\" runs the host "
                        "step during the next step instead");
         }
       }},
      {"scheduler", [&] { CheckScheduler(config, diag); }},
  };
  CheckFieldBounds(config, diag, [&](const std::string& path) {
    const auto rule = rules.find(path);
    if (rule != rules.end()) rule->second();
  });
}

}  // namespace config
}  // namespace zero3
