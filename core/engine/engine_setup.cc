// Copyright 2026 The zero3 Authors.
//
// engine_setup.cc: the engine's allocation and initial state: where the
// host share of the optimizer begins (HostShareBegin, AutoDeviceElements),
// the sub-groups and their weight-decay runs, the optimizer state on the
// device and the host, and the initial fp32 master and working shards
// (InitParameters). The host share's state is the host optimizer's.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/config/modes.h"
#include "core/engine/engine.h"
#include "core/kernels/dtype.h"
#include "core/kernels/reference.h"
#include "core/util/parallel_for.h"
#include "core/util/status_macros.h"
#include "core/zero/host_adam.h"

namespace zero3 {
namespace engine {

using runtime::AllocateDevice;
using runtime::AllocateHost;
using runtime::Buffer;
using runtime::DType;
using runtime::HostMemoryKind;
using runtime::HostTask;
using runtime::KernelCall;
using runtime::TensorRef;
namespace ops = runtime::ops;
using zero::HostTaskThreads;

int64_t Engine::HostShareBegin() {
  const int64_t total = layout_->total();
  if (!options_.offload_optimizer) return total;
  if (options_.offload_param) return 0;
  // The device share's elements: the configured fraction, or (auto) what
  // fits in the free device memory beside the buffers still to come.
  const int64_t device_elements =
      options_.auto_offload_ratio
          ? AutoDeviceElements()
          : std::llround((1 - options_.offload_ratio) * total);
  // The first parameter boundary that keeps the device share within it.
  for (int p = 0; p < layout_->num_params(); ++p) {
    const zero::ParamShard& s = layout_->param(p);
    if (s.offset + s.partition > device_elements) return s.offset;
  }
  return total;
}

absl::StatusOr<int64_t> Engine::DeviceStepEnd(int64_t offload_begin) const {
  const double share = options_.device_step_share;
  if (share < 0) {
    return absl::InvalidArgumentError(
        "zero3.offloaded_step \"auto\" is resolved from the hardware's "
        "figures before the engine starts (zero::DeviceStepShare); set "
        "\"host\" or \"device\"");
  }
  const int64_t total = layout_->total();
  if (share == 0 || !options_.offload_optimizer) return offload_begin;
  config::OffloadedStepAsk ask;
  ask.offload_optimizer = true;
  ask.offload_param = options_.offload_param;
  ask.nvme = !options_.nvme_path.empty();
  ask.auto_offload_ratio = options_.auto_offload_ratio;
  if (const char* why = config::OffloadedStepCannotLeaveHost(ask)) {
    return absl::InvalidArgumentError(
        absl::StrCat("an offloaded step on the device (share ", share,
                     ") cannot run: ", why));
  }
  if (share > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an offloaded step on the device takes a share of at most 1, not ",
        share));
  }
  const int64_t want =
      offload_begin + std::llround(share * (total - offload_begin));
  // The first parameter boundary at or past it.
  for (int p = 0; p < layout_->num_params(); ++p) {
    const int64_t offset = layout_->param(p).offset;
    if (offset >= want) return std::max(offset, offload_begin);
  }
  return total;
}

int64_t Engine::AutoDeviceElements() {
  runtime::Device& dev = rt_.device();
  // Still to come: the gradient reducer's device buffers (its fp32
  // partition of the device share counted per element below), and a margin
  // of 5% of the device for allocator slack and what the runtime keeps.
  const zero::GradReducer::DeviceFootprint reducer =
      zero::GradReducer::DeviceBytes(options_, options_.dtype, *layout_,
                                     model_->modules());
  const int64_t reserve = reducer.fixed_bytes + dev.total_memory_bytes() / 20;
  // Per element: master and moments, and what the reducer keeps per element
  // of the device share.
  return std::max<int64_t>(0, (dev.free_memory_bytes() - reserve) /
                                  (12 + reducer.bytes_per_device_element));
}

void Engine::PlanSubGroups() {
  // A sub-group across the streamed or the host share's start is cut there.
  std::vector<zero::ParamRange> groups =
      layout_->SubGroups(options_.sub_group_size);
  for (const int64_t cut : {ctx_.streamed_begin, ctx_.host_begin}) {
    std::vector<zero::ParamRange> cut_groups;
    for (const zero::ParamRange& g : groups) {
      if (g.offset >= cut || g.offset + g.elements <= cut) {
        cut_groups.push_back(g);
        continue;
      }
      int p = g.first;
      while (layout_->param(p).offset < cut) ++p;
      cut_groups.push_back(layout_->Range(g.first, p - 1));
      cut_groups.push_back(layout_->Range(p, g.last));
    }
    groups = std::move(cut_groups);
  }
  sub_groups_ = std::move(groups);
  std::vector<std::string> names;
  for (const model::ParamInfo& p : model_->params()) names.push_back(p.name);
  const std::vector<float> decays = zero::ParamWeightDecays(
      names, options_.weight_decay, options_.exclude_bias_and_norm_from_decay);
  for (const zero::ParamRange& g : sub_groups_) {
    decay_runs_.push_back(zero::DecayRuns(*layout_, decays, g));
  }
}

absl::Status Engine::AllocateOptimizerState() {
  runtime::Device& dev = rt_.device();
  const int64_t device_n = ctx_.streamed_begin;
  if (device_n > 0) {
    ZR_ASSIGN_OR_RETURN(master_,
                        AllocateDevice(dev, device_n * 4, "fp32 master"));
    ZR_ASSIGN_OR_RETURN(exp_avg_,
                        AllocateDevice(dev, device_n * 4, "adam exp_avg"));
    ZR_ASSIGN_OR_RETURN(exp_avg_sq_,
                        AllocateDevice(dev, device_n * 4, "adam exp_avg_sq"));
  }
  return absl::OkStatus();
}

absl::Status Engine::InitParameters(const model::ParamSource& params) {
  // The initial fp32 master: in place on the host when all of the optimizer
  // is there in fp32, else in pinned staging whose device share goes to the
  // device and whose host share is copied (or, bf16, rounded) to the host
  // master.
  const int64_t hb = ctx_.host_begin;
  const runtime::Buffer* in_place = host_->WritableMaster();
  const bool staged = hb > 0 || in_place == nullptr;
  // With the host share on NVMe, only the elements before it are staged:
  // its own go to the drives piece by piece.
  const bool on_nvme = host_->nvme() != nullptr;
  runtime::OwnedBuffer temp;
  if (staged) {
    // Pinned where the device share's H2D reads it.
    ZR_ASSIGN_OR_RETURN(
        temp,
        AllocateHost(rt_,
                     std::max<int64_t>(1, on_nvme ? hb : layout_->total()) * 4,
                     runtime::PinnedIf(hb > 0), "initial master staging"));
  }
  ZR_RETURN_IF_ERROR(
      WriteInitialMaster(params, staged ? temp.get() : *in_place));
  absl::Status enqueued = hb > 0 ? InitDeviceShards(temp) : absl::OkStatus();
  if (enqueued.ok()) enqueued = streamed_->ImportMaster(temp);
  if (enqueued.ok() && ctx_.host_elements() > 0) {
    if (on_nvme) {
      enqueued =
          host_->ImportMasterWith([&](int64_t begin, int64_t n, float* out) {
            return FillMaster(params, begin, n, out);
          });
    } else if (staged) {
      enqueued = host_->ImportMaster(temp);
    }
    if (enqueued.ok()) enqueued = host_->StageWorkingCopy();
  }
  // What was enqueued reads `temp`: done before it is freed, on every path.
  ZR_RETURN_IF_ERROR(compute_->Synchronize());
  ZR_RETURN_IF_ERROR(enqueued);
  return temp.Free();
}

absl::Status Engine::WriteInitialMaster(const model::ParamSource& params,
                                        const Buffer& host_master) {
  const int64_t n = host_master.bytes() / 4;
  HostTask init;
  init.label = "initialize parameters";
  init.writes = {host_master.All()};
  init.memory_bytes = n * 4;
  init.threads = HostTaskThreads(options_);
  init.run = [&]() -> absl::Status {
    return FillMaster(params, 0, n, static_cast<float*>(host_master.data()));
  };
  return rt_.RunHostTask(init);
}

absl::Status Engine::FillMaster(const model::ParamSource& params, int64_t begin,
                                int64_t n, float* out) const {
  // This rank's elements of every parameter, rounded through the working
  // dtype as DeepSpeed's master starts from the rounded low-precision
  // values; padding is zero. The source is asked for this rank's elements
  // only, in pieces, so a checkpoint is read in small host buffers.
  constexpr int64_t kPiece = int64_t{1} << 16;
  const DType dtype = options_.dtype;
  const int threads = zero::OptimizerThreads(options_.optimizer_threads);
  absl::Mutex mu;
  absl::Status first_error;
  for (const model::ParamInfo& p : model_->params()) {
    const zero::ParamShard& s = layout_->param(p.id);
    // The range's part of this parameter's partition, from `from` in it.
    const int64_t lo = std::max(begin, s.offset);
    const int64_t hi = std::min(begin + n, s.offset + s.partition);
    if (lo >= hi) continue;
    const int64_t from = lo - s.offset;
    const int64_t valid = layout_->ValidElements(p.id);
    const int64_t first = dp_rank_ * s.partition;
    // Each piece is filled independently, so threads split the work
    // without changing a value.
    ParallelFor(
        hi - lo, threads,
        [&](int64_t b0, int64_t e0) {
          for (int64_t b = b0; b < e0; b += kPiece) {
            const int64_t e = std::min(e0, b + kPiece);
            const int64_t at = from + b;  // in the partition
            float* o = out + (lo - begin) + b;
            const int64_t k =
                std::max<int64_t>(0, std::min(at + e - b, valid) - at);
            const absl::Status st =
                k > 0 ? params.Fill(p, first + at, k, o) : absl::OkStatus();
            if (!st.ok()) {
              absl::MutexLock lock(&mu);
              if (first_error.ok()) first_error = st;
              return;
            }
            std::fill(o + k, o + (e - b), 0.0f);
            if (dtype == DType::kF32) continue;
            for (int64_t i = 0; i < k; ++i) {
              o[i] = kernels::RoundThrough(dtype, o[i]);
            }
          }
        },
        kPiece);
    if (!first_error.ok()) return first_error;
  }
  return absl::OkStatus();
}

absl::Status Engine::InitDeviceShards(const Buffer& host_master) {
  // Moments start at zero: host buffers are zero-filled; device ones are
  // filled here.
  const int64_t total = ctx_.streamed_begin;
  if (total == 0) return absl::OkStatus();
  ZR_RETURN_IF_ERROR(compute_->Copy(
      master_.All(), host_master.Slice(0, total * 4), "master H2D"));
  for (const runtime::OwnedBuffer* b : {&exp_avg_, &exp_avg_sq_}) {
    ZR_RETURN_IF_ERROR(compute_->Memset(b->All(), 0, "zero adam moments"));
  }
  return CastDeviceShare("initial working shard");
}

absl::Status Engine::CastDeviceShare(absl::string_view label) {
  const int64_t n = ctx_.streamed_begin;
  if (n == 0) return absl::OkStatus();
  return compute_->Launch(
      KernelCall(ops::Cast::Of(TensorRef::Of(master_, DType::kF32, 0, n),
                               TensorRef::Of(shard_, options_.dtype, 0, n)),
                 std::string(label)));
}

}  // namespace engine
}  // namespace zero3
