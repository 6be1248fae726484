// Copyright 2026 The zero3 Authors.
//
// options.h: everything the ZeRO-3 engine can be told, as plain data.
//
// core/engine fills this from a resolved configuration (DeepSpeed's keys);
// tests fill it directly. Defaults are DeepSpeed's.

#ifndef ZERO3_CORE_ZERO_OPTIONS_H_
#define ZERO3_CORE_ZERO_OPTIONS_H_

#include <cstdint>
#include <string>

#include "core/config/modes.h"
#include "core/kernels/dtype.h"
#include "core/zero/lr_schedule.h"
#include "core/zero/sync_points.h"

namespace zero3 {
namespace zero {

// zero3.grad_offload, as core/config resolves it.
using GradOffload = config::GradOffload;

enum class SpeculativeStep { kOff, kOn, kAuto };

struct ZeroOptions {
  kernels::DType dtype = kernels::DType::kF32;
  // Tensor-parallel degree, modelled Megatron-style (see
  // core/model/transformer.h); ZeRO-3 shards over the world / tp
  // data-parallel ranks. Timing only: the simulator does not compute
  // tensor-parallel values.
  int tensor_parallel = 1;
  int64_t micro_batch = 1;
  int64_t seq = 16;
  int accumulation = 1;
  // Activation checkpointing (core/model/transformer.h): 0 keeps every
  // layer's activations until backward; k >= 1 recomputes layers 0, k, 2k,
  // ... in backward (1: every layer). Changes no value.
  int checkpoint_every = 0;
  // With checkpoint_every: recompute only the MLP of those layers.
  bool checkpoint_mlp_only = false;
  // With checkpoint_every: keep the recomputed layers' inputs in pinned host
  // memory between forward and backward (DeepSpeed's cpu_checkpointing).
  bool checkpoint_to_host = false;
  // The LM head on chunks of this many token rows, its logits computed
  // again in backward (core/model/transformer.h); 0: whole.
  int64_t lm_head_chunk_tokens = 0;

  // Clip the global gradient norm to this; 0 disables.
  double gradient_clipping = 1.0;

  // fp16 loss scaling (dtype kF16 only): static_loss_scale > 0 is static,
  // 0 is dynamic starting at 2^initial_scale_power.
  double static_loss_scale = 0;
  int initial_scale_power = 16;
  int loss_scale_window = 1000;
  int hysteresis = 2;
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1;

  // AdamW, DeepSpeed cpu_adam's math. `lr` is the optimizer's own learning
  // rate; the step's lr is lr_schedule.LrAt(lr, applied steps).
  double lr = 1e-3;
  LrSchedule lr_schedule;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  // Decay no biases and norm weights, as the Hugging Face Trainer groups
  // parameters (weight_decay.h); false decays every parameter, as DeepSpeed.
  bool exclude_bias_and_norm_from_decay = false;
  bool adamw_mode = true;
  bool bias_correction = true;

  bool overlap_comm = true;
  int64_t reduce_bucket_size = 500000000;
  int64_t prefetch_bucket_size = 50000000;
  int64_t param_persistence_threshold = 100000;
  int64_t max_live_parameters = 1000000000;
  int64_t max_reuse_distance = 1000000000;
  int64_t sub_group_size = 1000000000;

  bool offload_optimizer = false;
  // With offload_optimizer: the share of the optimizer state on the host
  // (offload_optimizer.ratio), or chosen at start-up from the device's free
  // memory when auto_offload_ratio.
  double offload_ratio = 1.0;
  bool auto_offload_ratio = false;
  bool optimizer_pin_memory = true;
  bool offload_param = false;
  bool param_pin_memory = true;
  GradOffload grad_offload = GradOffload::kAsync;
  // DeepSpeed's gradient path (zero3.grad_offload_copy: per_param_fp32):
  // each parameter's reduced gradient goes to an fp32 host buffer in a copy
  // of its own (cast to fp32 on the device first), after a round trip in the
  // model's dtype through a host gradient buffer (GradReducer::RoundTrip),
  // and the updated fp32 master goes back to the device, where it is cast
  // to the working dtype.
  // The fp32 master is pinned with optimizer_pin_memory, as DeepSpeed's is.
  // false: zero3's bucketed copies in the model's dtype.
  bool per_param_fp32_grads = false;
  // Host work per parameter as its reduced gradient is handed on
  // (zero3.host_work_per_grad_us; GradReducer::HostWork): a framework's
  // hooks, to ask what they cost. 0: none.
  int64_t host_work_per_grad_ns = 0;
  // Speculative host step (offload_optimizer.super_offload): at the
  // accumulation boundary the host runs AdamW on each piece of its share as
  // soon as the piece's gradients are on the host, while the device still
  // runs backward, assuming no clipping and finite gradients, out of place
  // into a second copy of the host master and moments; after backward the
  // norm validates it (commit: the copies swap) or the step is redone or
  // skipped as without it. Bitwise the same training. kOn speculates every
  // step; kAuto stops for 1, 2, 4, ... steps after each failed validation
  // (not after an abort before the first piece, which cost nothing).
  // Needs offload_optimizer, and neither offload_param nor
  // per_param_fp32_grads (HostStepPlanOf: speculative).
  SpeculativeStep speculative_step = SpeculativeStep::kOff;
  // The host share's AdamW deferred into the next step's forward
  // (zero3.host_step_overlap: "forward"): each piece runs just before the
  // first gather of a parameter it overlaps, its working copy then goes back
  // on a stream of its own, and the gather waits for it; the pieces left run
  // before the next backward, or before the state is read. Bitwise the same
  // training. Needs what HostStepPlanOf's in_forward says.
  bool host_step_in_forward = false;
  // ZeRO-Offload's one-step delayed parameter update
  // (zero3.host_step_overlap: "delayed"), which changes the training: the
  // forward and backward of step s run on the parameters from before step
  // s - 1's update, so the host share's AdamW of step s - 1 runs during
  // step s, beside its forward and backward, from a second host gradient
  // buffer. The device share's working copy lags the same way. Needs what
  // HostStepPlanOf's delayed says; takes precedence over host_step_in_forward
  // and the speculative step.
  bool host_step_delayed = false;
  // With host_step_delayed: a module whose issue kept the host waiting for
  // the device this long (a full launch queue) is followed by one deferred
  // piece, which the device's queued work hides. Not a configuration key;
  // tests set 0 (a piece after every module).
  int64_t delayed_piece_after_wait_ns = 1000000;
  // The host share's master weights and Adam moments: fp32, or bf16
  // (bf16.bf16_master_weights_and_grads, and bf16_optimizer_states for the
  // moments), which halves the host step's memory traffic; AdamW computes in
  // fp32 either way and rounds each result to nearest even as it stores it.
  // bf16 needs the whole optimizer on the host, a bf16 model and the
  // bucketed gradient copy (core/config's rules check it).
  kernels::DType host_master_dtype = kernels::DType::kF32;
  kernels::DType host_moments_dtype = kernels::DType::kF32;
  // zero3.offloaded_step: of the offloaded elements (past the device
  // share), the fraction whose AdamW runs on the device, their fp32 master
  // and moments streamed from host memory piece by piece (StreamedStep):
  // 0 ("host"), 1 ("device"), or with kAuto a fraction the tool resolves
  // from the hardware's figures before the engine starts
  // (zero::DeviceStepShare); the engine refuses kAuto left unresolved (a
  // negative share). Rounded up to a parameter boundary. The states keep
  // their dtypes (host_master_dtype, host_moments_dtype). Needs
  // offload_optimizer in host memory without offload_param and a fixed
  // ratio (config::OffloadedStepCannotLeaveHost; kHost otherwise).
  config::OffloadedStep offloaded_step = config::OffloadedStep::kHost;
  double device_step_share = 0;
  // zero3.offloaded_step_buffers: device slots of one piece each for the
  // streamed share; the first ones are copied in as the boundary backward
  // starts, so the copy-in runs ahead of the gradients (at least 2).
  int streamed_slots = 16;
  // offload_optimizer.device "nvme": the host share's master and moments in
  // a swap file per rank under this directory (NvmeState), stepped at the
  // step's end as the drive delivers each piece; empty: in host memory.
  std::string nvme_path;
  // offload_optimizer.buffer_count: host windows of one piece each (at
  // least 3: one read ahead, one stepped, one written back).
  int nvme_buffers = 4;
  // aio.block_size and aio.queue_depth: bytes per request, requests in
  // flight.
  int64_t aio_block_size = int64_t{1} << 20;
  int aio_queue_depth = 8;
  // Tests: the swap file's `nth` read (or write) fails with errno `error`.
  struct NvmeFault {
    bool write = false;
    int nth = -1;  // -1: none
    int error = 0;
  };
  NvmeFault nvme_fault;
  // offload_param.device "nvme" (with offload_param): the working shard in
  // a swap file per rank under this directory (NvmeParams), each partition
  // read into one of param_nvme_buffers host windows ahead of its gather,
  // each updated piece written back; empty: the shard in host memory.
  std::string param_nvme_path;
  int param_nvme_buffers = 5;
  // offload_param.buffer_size: at least the largest partition (elements).
  int64_t param_nvme_buffer_size = 100000000;
  NvmeFault param_nvme_fault;
  // Host threads for the optimizer step; 0 means all of the rank's cores.
  int optimizer_threads = 0;
  // Elements per host optimizer task: the H2D of one piece's working copy
  // overlaps the update of the next. Not a configuration key (the split
  // changes no value); tests make it small.
  int64_t host_step_piece = int64_t{1} << 25;

  uint64_t seed = 0;
  SyncPoints syncs;
};

// Whether the working shard is on NVMe (offload_param with
// param_nvme_path): zero::NvmeParams holds it.
inline bool ParamsOnNvme(const ZeroOptions& options) {
  return options.offload_param && !options.param_nvme_path.empty();
}

// Where the host share's update runs for `options`: config::PlanHostStep,
// the one rule the loader's notices use too, asked as the options ask
// (host_step_delayed takes precedence over host_step_in_forward).
inline config::HostStepPlan HostStepPlanOf(const ZeroOptions& options) {
  config::HostStepAsk ask;
  ask.offload_optimizer = options.offload_optimizer;
  ask.nvme = options.offload_optimizer && !options.nvme_path.empty();
  ask.offload_param = options.offload_param;
  ask.per_param_fp32 = options.per_param_fp32_grads;
  ask.speculative = options.speculative_step != SpeculativeStep::kOff;
  ask.overlap = options.host_step_delayed ? config::HostStepOverlap::kDelayed
                : options.host_step_in_forward
                    ? config::HostStepOverlap::kForward
                    : config::HostStepOverlap::kNone;
  return config::PlanHostStep(ask);
}

// The threads a host task of the optimizer declares: the configured count,
// or all of the rank's cores (the simulator caps this at the rank's share of
// the node).
inline int HostTaskThreads(const ZeroOptions& options) {
  return options.optimizer_threads > 0 ? options.optimizer_threads : 1 << 16;
}

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_OPTIONS_H_
