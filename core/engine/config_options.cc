// Copyright 2026 The zero3 Authors.

#include "core/engine/config_options.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/config/modes.h"
#include "core/zero/lr_schedule.h"

namespace zero3 {
namespace engine {

namespace {

// A resolved scheduler section (its type's parameters all set).
zero::LrSchedule ScheduleFromConfig(const config::Scheduler& s) {
  zero::LrSchedule out;
  const std::string& type = s.type();
  out.type = type == "WarmupCosineLR"  ? zero::LrScheduleType::kWarmupCosineLR
             : type == "WarmupDecayLR" ? zero::LrScheduleType::kWarmupDecayLR
             : type == "OneCycle"      ? zero::LrScheduleType::kOneCycle
             : type == "LRRangeTest"   ? zero::LrScheduleType::kLRRangeTest
                                       : zero::LrScheduleType::kWarmupLR;
  const config::SchedulerParams& p = s.params();
  out.range_min_lr = p.lr_range_test_min_lr();
  out.range_step_size = p.lr_range_test_step_size();
  out.range_step_rate = p.lr_range_test_step_rate();
  out.range_staircase = p.lr_range_test_staircase();
  out.cycle_min_lr = p.cycle_min_lr();
  out.cycle_max_lr = p.cycle_max_lr();
  out.decay_lr_rate = p.decay_lr_rate();
  out.first_step_size = p.cycle_first_step_size();
  out.second_step_size = p.cycle_second_step_size();
  out.first_stair_count = p.cycle_first_stair_count();
  out.second_stair_count = p.cycle_second_stair_count();
  out.decay_step_size = p.decay_step_size();
  out.cycle_momentum = p.cycle_momentum();
  out.cycle_min_mom = p.cycle_min_mom();
  out.cycle_max_mom = p.cycle_max_mom();
  out.decay_mom_rate = p.decay_mom_rate();
  out.warmup_type = p.warmup_type() == "linear" ? zero::WarmupType::kLinear
                                                : zero::WarmupType::kLog;
  out.warmup_min_lr = p.warmup_min_lr();
  out.warmup_max_lr = p.warmup_max_lr();
  out.warmup_num_steps = p.warmup_num_steps();
  out.total_num_steps = p.total_num_steps();
  out.warmup_min_ratio = p.warmup_min_ratio();
  out.cos_min_ratio = p.cos_min_ratio();
  out.last_batch_iteration = p.last_batch_iteration();
  return out;
}

}  // namespace

absl::StatusOr<zero::ZeroOptions> OptionsFromConfig(const config::Config& c,
                                                    int64_t seq,
                                                    uint64_t seed) {
  zero::ZeroOptions o;
  if (seq < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequence length must be at least 1, got ", seq));
  }
  o.seq = seq;
  o.seed = seed;
  o.dtype = c.bf16().enabled()   ? kernels::DType::kBF16
            : c.fp16().enabled() ? kernels::DType::kF16
                                 : kernels::DType::kF32;
  o.micro_batch = c.train_micro_batch_size_per_gpu();
  o.accumulation = static_cast<int>(c.gradient_accumulation_steps());
  o.gradient_clipping = c.gradient_clipping();

  const config::Fp16& f = c.fp16();
  o.static_loss_scale = f.loss_scale();
  o.initial_scale_power = f.initial_scale_power();
  o.loss_scale_window = static_cast<int>(f.loss_scale_window());
  o.hysteresis = f.hysteresis();
  o.consecutive_hysteresis = f.consecutive_hysteresis();
  o.min_loss_scale = static_cast<double>(f.min_loss_scale());

  const config::AdamParams& a = c.optimizer().params();
  o.lr = a.lr();
  if (a.betas_size() == 2) {
    o.beta1 = static_cast<float>(a.betas(0));
    o.beta2 = static_cast<float>(a.betas(1));
  }
  o.eps = static_cast<float>(a.eps());
  o.weight_decay = static_cast<float>(a.weight_decay());
  o.bias_correction = a.bias_correction();
  o.exclude_bias_and_norm_from_decay =
      c.zero3().weight_decay_exclude_bias_and_norm();
  o.checkpoint_every = c.zero3().activation_checkpoint_interval();
  o.checkpoint_mlp_only = c.zero3().activation_checkpoint_mlp_only();
  o.checkpoint_to_host = c.activation_checkpointing().cpu_checkpointing();
  o.lm_head_chunk_tokens = c.zero3().lm_head_chunk_tokens();
  if (c.has_scheduler()) o.lr_schedule = ScheduleFromConfig(c.scheduler());
  // As DeepSpeed: "Adam" with adam_w_mode (the default) is AdamW too.
  o.adamw_mode =
      absl::AsciiStrToLower(c.optimizer().type()) == "adamw" || a.adam_w_mode();

  const config::ZeroOptimization& z = c.zero_optimization();
  const config::Modes modes = config::ModesOf(c);
  o.overlap_comm = z.overlap_comm();
  o.reduce_bucket_size = z.reduce_bucket_size();
  o.prefetch_bucket_size = z.stage3_prefetch_bucket_size();
  o.param_persistence_threshold = z.stage3_param_persistence_threshold();
  o.max_live_parameters = z.stage3_max_live_parameters();
  o.max_reuse_distance = z.stage3_max_reuse_distance();
  o.sub_group_size = z.sub_group_size();
  o.offload_optimizer = modes.offload_optimizer != config::OffloadDevice::kNone;
  o.optimizer_pin_memory = z.offload_optimizer().pin_memory();
  o.offload_ratio = z.offload_optimizer().ratio();
  o.auto_offload_ratio = c.zero3().auto_offload_ratio();
  o.offload_param = modes.offload_param != config::OffloadDevice::kNone;
  if (modes.offload_optimizer == config::OffloadDevice::kNvme) {
    o.nvme_path = z.offload_optimizer().nvme_path();
    o.nvme_buffers = std::max(3, z.offload_optimizer().buffer_count());
  }
  o.param_pin_memory = z.offload_param().pin_memory();
  if (modes.offload_param == config::OffloadDevice::kNvme) {
    o.param_nvme_path = z.offload_param().nvme_path();
    o.param_nvme_buffers = std::max(2, z.offload_param().buffer_count());
    o.param_nvme_buffer_size = z.offload_param().buffer_size();
  }
  if (modes.offload_optimizer == config::OffloadDevice::kNvme ||
      modes.offload_param == config::OffloadDevice::kNvme) {
    o.aio_block_size = c.aio().block_size();
    o.aio_queue_depth = c.aio().queue_depth();
  }
  if (o.offload_param && !o.offload_optimizer) {
    return absl::InvalidArgumentError(
        "zero_optimization.offload_param needs "
        "zero_optimization.offload_optimizer.device \"cpu\" in zero3 (the "
        "host keeps the fp32 master that the offloaded shards come from)");
  }
  o.grad_offload = modes.grad_offload;
  o.optimizer_threads = c.zero3().optimizer_threads();
  o.per_param_fp32_grads =
      modes.grad_offload_copy == config::GradOffloadCopy::kPerParamFp32;
  o.host_work_per_grad_ns =
      static_cast<int64_t>(c.zero3().host_work_per_grad_us() * 1e3);
  o.host_step_in_forward =
      modes.host_step_overlap == config::HostStepOverlap::kForward;
  o.host_step_delayed =
      modes.host_step_overlap == config::HostStepOverlap::kDelayed;
  // core/config's rules allow these only with the whole optimizer on the
  // host and a bf16 model.
  if (c.bf16().bf16_master_weights_and_grads()) {
    o.host_master_dtype = kernels::DType::kBF16;
    if (c.bf16().bf16_optimizer_states()) {
      o.host_moments_dtype = kernels::DType::kBF16;
    }
  }
  if (config::OffloadedStepStaysOnHost(c) == nullptr) {
    o.offloaded_step = modes.offloaded_step;
    o.device_step_share =
        modes.offloaded_step == config::OffloadedStep::kDevice ? 1
        : modes.offloaded_step == config::OffloadedStep::kAuto ? -1
                                                               : 0;
    o.streamed_slots = c.zero3().offloaded_step_buffers();
  }
  o.speculative_step = z.offload_optimizer().super_offload()
                           ? zero::SpeculativeStep::kAuto
                           : zero::SpeculativeStep::kOff;
  return o;
}

}  // namespace engine
}  // namespace zero3
