// Copyright 2026 The zero3 Authors.
//
// engine_state.cc: reading and writing the engine's state: one parameter's
// fp32 master (MasterParam), the training state of a checkpoint
// (ExportState, ImportState) and sums across the ranks (SumAcrossRanks,
// CountRanks).

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/util/parallel_for.h"
#include "core/util/status_macros.h"
#include "core/zero/host_adam.h"

namespace zero3 {
namespace engine {

using runtime::AllocateDevice;
using runtime::AllocateHost;
using runtime::DType;
using runtime::HostMemoryKind;
using runtime::HostTask;
using runtime::TensorRef;
using zero::HostTaskThreads;

absl::StatusOr<std::vector<float>> Engine::MasterParam(int param) {
  if (!rt_.computes_values()) {
    return absl::FailedPreconditionError("the runtime holds no values");
  }
  ZR_RETURN_IF_ERROR(host_->FinishHostStep());
  const zero::ParamShard& s = layout_->param(param);
  const int64_t valid = layout_->ValidElements(param);
  std::vector<float> out(valid);
  if (valid == 0) return out;
  ZR_RETURN_IF_ERROR(rt_.device().Synchronize());
  const bool on_host = s.offset >= ctx_.host_begin;
  const bool streamed = !on_host && s.offset >= ctx_.streamed_begin;
  if (on_host) {
    ZR_RETURN_IF_ERROR(
        host_->ReadState(0, s.offset - ctx_.host_begin, valid, out.data()));
    return out;
  }
  runtime::OwnedBuffer temp;
  if (!on_host && !streamed) {
    ZR_ASSIGN_OR_RETURN(temp,
                        AllocateHost(rt_, valid * 4, HostMemoryKind::kPinned,
                                     "master readback"));
    ZR_RETURN_IF_ERROR(compute_->Copy(
        temp.All(), master_.Slice(s.offset * 4, valid * 4), "master D2H"));
    ZR_RETURN_IF_ERROR(compute_->Synchronize());
  }
  HostTask read;
  read.label = "read master";
  if (streamed) {
    read.reads = streamed_->StateBuffers();
  } else {
    read.reads = {temp.All()};
  }
  read.run = [&]() -> absl::Status {
    if (streamed) {
      streamed_->Read(0, s.offset, valid, out.data());
    } else {
      std::memcpy(out.data(), temp.data(), valid * 4);
    }
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(read));
  ZR_RETURN_IF_ERROR(temp.Free());
  return out;
}

// Training state ------------------------------------------------------------

absl::StatusOr<TrainingState> Engine::ExportState() {
  TrainingState state;
  ZR_RETURN_IF_ERROR(ExportState(&state));
  return state;
}

absl::Status Engine::ExportState(TrainingState* into) {
  if (!rt_.computes_values()) {
    return absl::FailedPreconditionError("the runtime holds no values");
  }
  ZR_RETURN_IF_ERROR(host_->FinishHostStep());
  const int64_t hb = ctx_.host_begin;
  const int64_t sb = ctx_.streamed_begin;
  const int64_t device_bytes = sb * 4;
  const int64_t streamed_bytes = (hb - sb) * 4;
  const int64_t host_bytes = ctx_.host_elements() * 4;
  TrainingState& state = *into;
  state.steps_done = step_;
  state.adam_steps = adam_step_;
  state.scaler = scaler_.state();
  ZR_RETURN_IF_ERROR(rt_.device().Synchronize());
  // The device share through pinned staging; the streamed share in place
  // (the device synchronized: the streamed state is back); the host share
  // by the host optimizer (from the drive on NVMe).
  const runtime::OwnedBuffer* device[] = {&master_, &exp_avg_, &exp_avg_sq_};
  runtime::OwnedBuffer temp;
  HostTask read;
  read.label = "read training state";
  if (sb > 0) {
    ZR_ASSIGN_OR_RETURN(
        temp, AllocateHost(rt_, 3 * device_bytes, HostMemoryKind::kPinned,
                           "training state readback"));
    for (int i = 0; i < 3; ++i) {
      ZR_RETURN_IF_ERROR(
          compute_->Copy(temp.Slice(i * device_bytes, device_bytes),
                         device[i]->All(), "training state D2H"));
    }
    ZR_RETURN_IF_ERROR(compute_->Synchronize());
    read.reads.push_back(temp.All());
  }
  if (streamed_bytes > 0) {
    for (const runtime::BufferSlice& b : streamed_->StateBuffers()) {
      read.reads.push_back(b);
    }
  }
  std::vector<float>* outs[] = {&state.master, &state.exp_avg,
                                &state.exp_avg_sq};
  read.memory_bytes = 3 * (device_bytes + streamed_bytes);
  read.threads = HostTaskThreads(options_);
  read.run = [&]() -> absl::Status {
    const int threads = zero::OptimizerThreads(options_.optimizer_threads);
    for (int i = 0; i < 3; ++i) {
      // A vector of this size already (a snapshot reused) is not touched.
      outs[i]->resize(layout_->total());
      char* out = reinterpret_cast<char*>(outs[i]->data());
      // On all of the rank's cores: a snapshot for a checkpoint is a copy of
      // the whole state, taken while the step waits.
      if (device_bytes > 0) {
        ParallelCopy(out,
                     static_cast<const char*>(temp.data()) + i * device_bytes,
                     device_bytes, threads);
      }
      if (streamed_bytes > 0) {
        streamed_->Read(i, sb, hb - sb, outs[i]->data() + sb);
      }
    }
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(read));
  if (host_bytes > 0) {
    for (int i = 0; i < 3; ++i) {
      ZR_RETURN_IF_ERROR(
          host_->ReadState(i, 0, ctx_.host_elements(), outs[i]->data() + hb));
    }
  }
  return temp.Free();
}

absl::Status Engine::ImportState(const TrainingState& state) {
  if (!rt_.computes_values()) {
    return absl::FailedPreconditionError("the runtime holds no values");
  }
  ZR_RETURN_IF_ERROR(host_->FinishHostStep());
  const int64_t total = layout_->total();
  for (const std::vector<float>* v :
       {&state.master, &state.exp_avg, &state.exp_avg_sq}) {
    if (static_cast<int64_t>(v->size()) != total) {
      return absl::InvalidArgumentError(absl::StrCat(
          "training state of ", v->size(), " elements per tensor; rank ",
          rt_.rank(), "'s partitions hold ", total));
    }
  }
  ZR_RETURN_IF_ERROR(rt_.device().Synchronize());
  const int64_t hb = ctx_.host_begin;
  const int64_t host_bytes = ctx_.host_elements() * 4;
  if (host_bytes > 0) {
    ZR_RETURN_IF_ERROR(host_->Import(state.master.data() + hb,
                                     state.exp_avg.data() + hb,
                                     state.exp_avg_sq.data() + hb));
  }
  const int64_t sb = ctx_.streamed_begin;
  if (hb > sb) {
    ZR_RETURN_IF_ERROR(streamed_->Import(state.master.data() + sb,
                                         state.exp_avg.data() + sb,
                                         state.exp_avg_sq.data() + sb));
  }
  if (sb > 0) ZR_RETURN_IF_ERROR(ImportDeviceState(state));
  SetSteps(state.steps_done);
  adam_step_ = state.adam_steps;
  scaler_.Restore(state.scaler);
  return absl::OkStatus();
}

absl::Status Engine::ImportDeviceState(const TrainingState& state) {
  const int64_t n = ctx_.streamed_begin;
  const int64_t bytes = n * 4;
  ZR_ASSIGN_OR_RETURN(runtime::OwnedBuffer temp,
                      AllocateHost(rt_, 3 * bytes, HostMemoryKind::kPinned,
                                   "training state staging"));
  const std::vector<float>* values[] = {&state.master, &state.exp_avg,
                                        &state.exp_avg_sq};
  HostTask write;
  write.label = "stage training state";
  write.writes = {temp.Slice(0, 3 * bytes)};
  write.memory_bytes = 3 * bytes;
  write.run = [&]() -> absl::Status {
    for (int i = 0; i < 3; ++i) {
      std::memcpy(static_cast<char*>(temp.data()) + i * bytes,
                  values[i]->data(), bytes);
    }
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(write));
  const runtime::OwnedBuffer* targets[] = {&master_, &exp_avg_, &exp_avg_sq_};
  absl::Status enqueued;
  for (int i = 0; i < 3 && enqueued.ok(); ++i) {
    enqueued = compute_->Copy(targets[i]->All(), temp.Slice(i * bytes, bytes),
                              "training state H2D");
  }
  if (enqueued.ok()) enqueued = CastDeviceShare("restored working shard");
  // What was enqueued reads `temp`: done before it is freed, on every path.
  ZR_RETURN_IF_ERROR(compute_->Synchronize());
  ZR_RETURN_IF_ERROR(enqueued);
  return temp.Free();
}

absl::StatusOr<int> Engine::CountRanks(bool flag, const std::string& label) {
  ZR_ASSIGN_OR_RETURN(const std::vector<float> sum,
                      SumAcrossRanks({flag ? 1.0f : 0.0f}, label));
  return static_cast<int>(sum[0]);
}

absl::StatusOr<std::vector<float>> Engine::SumAcrossRanks(
    const std::vector<float>& values, const std::string& label) {
  if (!rt_.computes_values()) {
    return absl::FailedPreconditionError("the runtime holds no values");
  }
  const int64_t n = static_cast<int64_t>(values.size());
  const int64_t bytes = 4 * std::max<int64_t>(n, 1);
  // A few values (the per-step agreements) use the buffers kept for them:
  // nothing is allocated or freed between steps.
  runtime::OwnedBuffer own_host, own_device;
  const bool kept = n <= kSumSlots;
  if (!kept) {
    ZR_ASSIGN_OR_RETURN(own_host,
                        AllocateHost(rt_, 2 * bytes, HostMemoryKind::kPinned,
                                     absl::StrCat(label, " (host)")));
    ZR_ASSIGN_OR_RETURN(own_device,
                        AllocateDevice(rt_.device(), 2 * bytes, label));
  }
  const runtime::OwnedBuffer& host = kept ? sum_host_ : own_host;
  const runtime::OwnedBuffer& device = kept ? sum_device_ : own_device;
  HostTask put;
  put.label = absl::StrCat(label, ": this rank's values");
  put.writes = {host.Slice(0, bytes)};
  put.run = [&]() -> absl::Status {
    std::memcpy(host.Slice(0, bytes).data(), values.data(), 4 * n);
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(put));
  ZR_RETURN_IF_ERROR(
      compute_->Copy(device.Slice(0, bytes), host.Slice(0, bytes), "sum H2D"));
  ZR_RETURN_IF_ERROR(
      rt_.world().AllReduce(*compute_, TensorRef::Of(device, DType::kF32, 0, n),
                            TensorRef::Of(device, DType::kF32, n, n),
                            runtime::ReduceOp::kSum, label));
  ZR_RETURN_IF_ERROR(compute_->Copy(host.Slice(bytes, bytes),
                                    device.Slice(bytes, bytes), "sum D2H"));
  ZR_RETURN_IF_ERROR(compute_->Synchronize());
  std::vector<float> sum(n);
  HostTask get;
  get.label = absl::StrCat(label, ": sums");
  get.reads = {host.Slice(bytes, bytes)};
  get.run = [&]() -> absl::Status {
    std::memcpy(sum.data(), host.Slice(bytes, bytes).data(), 4 * n);
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(get));
  return sum;
}

}  // namespace engine
}  // namespace zero3
