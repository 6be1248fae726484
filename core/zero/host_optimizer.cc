// Copyright 2026 The zero3 Authors.
//
// host_optimizer.cc: the host share's state, its update at the step's end
// (or its deferral to the plan's later point) and the new working copy's
// way back to the device. The deferred update: host_deferral.cc; the
// speculative one: host_speculation.cc.

#include "core/zero/host_optimizer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/kernels/dtype.h"
#include "core/util/check.h"
#include "core/util/parallel_for.h"
#include "core/util/status_macros.h"
#include "core/zero/host_adam.h"

namespace zero3 {
namespace zero {

using runtime::Buffer;
using runtime::BufferSlice;
using runtime::DType;
using runtime::HostTask;
using runtime::KernelCall;
using runtime::TensorRef;
namespace ops = runtime::ops;

namespace {

// DeepSpeed's path writes no working copy on the host: the fp32 master goes
// back to the device (unless offload_param keeps the working shard on the
// host, which the update then writes).
bool Fp32Back(const ZeroOptions& options) {
  return options.per_param_fp32_grads && !options.offload_param;
}

}  // namespace

HostOptimizer::HostOptimizer(const ZeroContext& ctx, GradReducer& reducer,
                             const Buffer& shard)
    : ctx_(ctx),
      options_(*ctx.options),
      plan_(HostStepPlanOf(*ctx.options)),
      rt_(*ctx.rt),
      reducer_(reducer),
      shard_(shard) {}

HostOptimizer::~HostOptimizer() = default;

absl::StatusOr<std::unique_ptr<HostOptimizer>> HostOptimizer::Create(
    const ZeroContext& ctx, GradReducer& reducer, const Buffer& shard,
    const std::vector<ParamRange>& sub_groups,
    const std::vector<std::vector<DecayRun>>& decay_runs) {
  std::unique_ptr<HostOptimizer> h(new HostOptimizer(ctx, reducer, shard));
  h->pieces_ = PlanHostPieces(sub_groups, decay_runs, ctx.host_begin,
                              ctx.options->host_step_piece, reducer.buckets());
  if (h->elements() > 0) ZR_RETURN_IF_ERROR(h->Allocate());
  return h;
}

absl::Status HostOptimizer::Allocate() {
  const int64_t n = elements();
  // As in DeepSpeed, the moments are plain host memory: only buffers that
  // copies touch need pinning, the master too where it goes back to the
  // device in fp32 (DeepSpeed's path).
  const bool fp32_back = Fp32Back(options_);
  if (!options_.nvme_path.empty()) {
    if (fp32_back) {
      return absl::InvalidArgumentError(
          "the optimizer state on NVMe needs zero3.grad_offload_copy "
          "\"bucketed\"");
    }
    ZR_ASSIGN_OR_RETURN(
        nvme_, NvmeState::Create(rt_, options_, pieces_, ctx_.host_begin));
    state_ = HostState::DtypesOnly(options_.host_master_dtype,
                                   options_.host_moments_dtype);
  } else {
    ZR_ASSIGN_OR_RETURN(
        state_, HostState::Allocate(
                    rt_, n,
                    fp32_back ? runtime::PinnedIf(options_.optimizer_pin_memory)
                              : runtime::HostMemoryKind::kPageable,
                    plan_.speculative, options_.host_master_dtype,
                    options_.host_moments_dtype));
  }
  if (fp32_back) {
    const int64_t piece = std::min(n, options_.host_step_piece);
    ZR_ASSIGN_OR_RETURN(
        writeback_,
        runtime::AllocateDevice(rt_.device(), std::max<int64_t>(1, piece) * 4,
                                "fp32 parameter write-back"));
  }
  if (ParamsOnNvme(options_)) {
    ZR_ASSIGN_OR_RETURN(
        nvme_params_, NvmeParams::Create(rt_, options_, *ctx_.layout, pieces_));
  }
  if (!options_.offload_param) {
    ZR_ASSIGN_OR_RETURN(
        staging_,
        runtime::AllocateHost(rt_, n * kernels::DTypeSize(options_.dtype),
                              runtime::PinnedIf(options_.optimizer_pin_memory),
                              "parameter write-back staging"));
  }
  if (!plan_.moves()) return absl::OkStatus();
  runtime::Device& dev = rt_.device();
  ZR_ASSIGN_OR_RETURN(write_back_, dev.CreateStream("write-back"));
  for (size_t i = 0; i < pieces_.size(); ++i) {
    ZR_ASSIGN_OR_RETURN(piece_written_.emplace_back(), dev.CreateEvent());
  }
  piece_deferred_.assign(pieces_.size(), false);
  write_pending_.assign(pieces_.size(), false);
  if (plan_.carries_over) {
    ZR_ASSIGN_OR_RETURN(norm_copied_, dev.CreateEvent());
  }
  if (plan_.speculative) state_.SetPieces(static_cast<int>(pieces_.size()));
  return absl::OkStatus();
}

// State ---------------------------------------------------------------------

absl::Status HostOptimizer::StageWorkingCopy() {
  const DType dtype = options_.dtype;
  const int64_t esize = kernels::DTypeSize(dtype);
  const int64_t n = elements();
  const Buffer& target = options_.offload_param ? shard_ : staging_.get();
  if (nvme_ != nullptr || nvme_params_ != nullptr) {
    ZR_RETURN_IF_ERROR(StageByPiece(target));
  } else {
    ZR_RETURN_IF_ERROR(StageFromMemory(target));
  }
  if (options_.offload_param) return absl::OkStatus();
  ZR_RETURN_IF_ERROR(
      ctx_.compute->Copy(shard_.Slice(ctx_.host_begin * esize, n * esize),
                         staging_.All(), "initial shard H2D"));
  return ctx_.compute->Synchronize();
}

absl::Status HostOptimizer::StageByPiece(const Buffer& target) {
  const DType dtype = options_.dtype;
  const int64_t esize = kernels::DTypeSize(dtype);
  for (int i = 0; i < static_cast<int>(pieces_.size()); ++i) {
    const HostPiece& piece = pieces_[i];
    const int64_t at = piece.offset - ctx_.host_begin;
    HostState::Set set;
    if (nvme_ != nullptr) {
      ZR_RETURN_IF_ERROR(nvme_->Prefetch(i + 1));
      ZR_ASSIGN_OR_RETURN(set, nvme_->Acquire(i));
    } else {
      set = state_.First(at, piece.elements);
    }
    BufferSlice out;
    if (nvme_params_ != nullptr) {
      ZR_ASSIGN_OR_RETURN(out, nvme_params_->WriteWindow(i));
    } else {
      out = target.Slice(at * esize, piece.elements * esize);
    }
    HostTask cast;
    cast.label = absl::StrCat("initial working shard, ", piece.name);
    cast.reads = {set.master};
    cast.writes = {out};
    cast.memory_bytes = piece.elements * (4 + esize);
    cast.threads = HostTaskThreads(options_);
    cast.run = [&]() -> absl::Status {
      if (state_.master_dtype() == DType::kF32) {
        HostCastFromFloat(static_cast<const float*>(set.master.data()), dtype,
                          cast.writes[0].data(), piece.elements,
                          OptimizerThreads(options_.optimizer_threads));
      } else {
        // A bf16 master is its working copy (the model is bf16).
        std::memcpy(cast.writes[0].data(), set.master.data(),
                    piece.elements * esize);
      }
      return absl::OkStatus();
    };
    ZR_RETURN_IF_ERROR(rt_.RunHostTask(cast));
    if (nvme_ != nullptr) ZR_RETURN_IF_ERROR(nvme_->Release(i, false));
    if (nvme_params_ != nullptr) ZR_RETURN_IF_ERROR(nvme_params_->Write(i));
  }
  return absl::OkStatus();
}

absl::Status HostOptimizer::StageFromMemory(const Buffer& target) {
  const DType dtype = options_.dtype;
  const int64_t esize = kernels::DTypeSize(dtype);
  const int64_t n = elements();
  HostTask cast;
  cast.label = "initial working shard";
  cast.reads = {state_.master().All()};
  cast.writes = {target.Slice(0, n * esize)};
  cast.memory_bytes = n * (kernels::DTypeSize(state_.master_dtype()) + esize);
  cast.threads = HostTaskThreads(options_);
  cast.run = [&]() -> absl::Status {
    const int threads = OptimizerThreads(options_.optimizer_threads);
    if (state_.master_dtype() == DType::kF32) {
      HostCastFromFloat(static_cast<const float*>(state_.master().data()),
                        dtype, target.data(), n, threads);
    } else {
      // A bf16 master is its working copy (the model is bf16).
      ParallelCopy(target.data(), state_.master().data(), n * esize, threads);
    }
    return absl::OkStatus();
  };
  return rt_.RunHostTask(cast);
}

absl::Status HostOptimizer::Import(const float* master, const float* exp_avg,
                                   const float* exp_avg_sq) {
  const int64_t n = elements();
  const float* values[] = {master, exp_avg, exp_avg_sq};
  if (nvme_ != nullptr) {
    ZR_RETURN_IF_ERROR(nvme_->Write(values));
    write_pending_.assign(write_pending_.size(), false);
    return StageWorkingCopy();
  }
  HostTask write;
  write.label = "write training state";
  write.writes = {state_.master().All(), state_.exp_avg().All(),
                  state_.exp_avg_sq().All()};
  write.memory_bytes = n * state_.bytes_per_element();
  write.run = [&]() -> absl::Status {
    // bf16 states are rounded: exact for a bf16 run's own checkpoint.
    for (int t = 0; t < 3; ++t) {
      state_.Write(t, values[t], OptimizerThreads(options_.optimizer_threads));
    }
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(write));
  ZR_RETURN_IF_ERROR(StageWorkingCopy());
  // The working copy is the imported master's now: a delayed update's
  // staged one (FinishHostStep) is stale.
  write_pending_.assign(write_pending_.size(), false);
  return absl::OkStatus();
}

absl::Status HostOptimizer::ImportMaster(const Buffer& full_master) {
  if (elements() == 0) return absl::OkStatus();
  if (nvme_ != nullptr) {
    return absl::FailedPreconditionError(
        "the host share's state is on NVMe: its initial master goes there "
        "piece by piece (ImportMasterWith)");
  }
  const int64_t n = elements();
  HostTask copy;
  copy.label = "host share of the initial master";
  copy.reads = {full_master.Slice(ctx_.host_begin * 4, n * 4)};
  copy.writes = {state_.master().All()};
  copy.memory_bytes = n * 4 + n * kernels::DTypeSize(state_.master_dtype());
  copy.run = [&]() -> absl::Status {
    // Rounded through the working dtype already: a bf16 master holds it
    // exactly.
    state_.Write(0, copy.reads[0].As<float>(),
                 OptimizerThreads(options_.optimizer_threads));
    return absl::OkStatus();
  };
  return rt_.RunHostTask(copy);
}

absl::Status HostOptimizer::ImportMasterWith(const MasterFill& fill) {
  if (nvme_ == nullptr) {
    return absl::FailedPreconditionError(
        "ImportMasterWith is for the state on NVMe");
  }
  return nvme_->WriteMasterWith(fill);
}

const runtime::Buffer* HostOptimizer::WritableMaster() const {
  if (nvme_ != nullptr || elements() == 0 ||
      state_.master_dtype() != DType::kF32) {
    return nullptr;
  }
  return &state_.master().get();
}

absl::Status HostOptimizer::ReadState(int t, int64_t begin, int64_t n,
                                      float* out) {
  if (n <= 0) return absl::OkStatus();
  if (nvme_ != nullptr) return nvme_->Read(t, begin, n, out);
  const runtime::OwnedBuffer* tensors[] = {&state_.master(), &state_.exp_avg(),
                                           &state_.exp_avg_sq()};
  const int64_t esize = kernels::DTypeSize(state_.dtype(t));
  HostTask read;
  read.label = "read host optimizer state";
  read.reads = {tensors[t]->Slice(begin * esize, n * esize)};
  read.memory_bytes = n * (4 + esize);
  read.threads = HostTaskThreads(options_);
  read.run = [&]() -> absl::Status {
    HostWidenToFloat(read.reads[0].data(), state_.dtype(t), out, n,
                     OptimizerThreads(options_.optimizer_threads));
    return absl::OkStatus();
  };
  return rt_.RunHostTask(read);
}

absl::Status HostOptimizer::Prefetch() {
  if (nvme_ == nullptr) return absl::OkStatus();
  for (int i = 0; i < nvme_->ahead(); ++i) {
    ZR_RETURN_IF_ERROR(nvme_->Prefetch(i));
  }
  return absl::OkStatus();
}

// The update -----------------------------------------------------------------

void HostOptimizer::SetStep(int64_t step) { step_ = step; }

void HostOptimizer::BeginStep() { outcome_ = Outcome(); }

absl::Status HostOptimizer::Update(const kernels::AdamWArgs& args,
                                   bool unclipped) {
  if (outcome_.speculation != Speculation::kNone) {
    ZR_RETURN_IF_ERROR(ResolveSpeculation(unclipped, /*finite=*/true));
  }
  if (elements() == 0 || outcome_.speculation == Speculation::kCommitted) {
    return absl::OkStatus();
  }
  const bool delayed = plan_.delayed;
  if (!(plan_.in_forward || delayed) || write_back_ == nullptr) {
    return UpdateNow(args);
  }
  // Under the next forward, piece by piece (RunDeferredPieces), or delayed:
  // beside the next step's forward and backward. The last update's pieces
  // all ran before this step's update.
  ZR_CHECK_EQ(FirstDeferredPiece(), -1) << "a deferred host update was lost";
  deferred_args_ = args;
  deferred_grads_ = reducer_.host_partition();
  piece_deferred_.assign(pieces_.size(), true);
  // Delayed, the next backward's gradients go to the other buffer.
  if (delayed) reducer_.SwapHostPartition();
  return absl::OkStatus();
}

absl::Status HostOptimizer::Skip() {
  if (outcome_.speculation == Speculation::kNone) return absl::OkStatus();
  return ResolveSpeculation(/*validated=*/false, /*finite=*/false);
}

absl::Status HostOptimizer::UpdateNow(const kernels::AdamWArgs& args) {
  for (int i = 0; i < static_cast<int>(pieces_.size()); ++i) {
    // On NVMe: the next pieces read while this one steps, and it is
    // written back while the next one does.
    if (nvme_ != nullptr) {
      for (int j = 1; j <= nvme_->ahead(); ++j) {
        ZR_RETURN_IF_ERROR(nvme_->Prefetch(i + j));
      }
    }
    ZR_RETURN_IF_ERROR(AdamPiece(i, args, reducer_.host_partition(), false));
    if (nvme_ != nullptr) ZR_RETURN_IF_ERROR(nvme_->Release(i, true));
    ZR_RETURN_IF_ERROR(WriteBackPiece(i));
  }
  return absl::OkStatus();
}

absl::Status HostOptimizer::AdamPiece(int index, const kernels::AdamWArgs& args,
                                      const TensorRef& grads,
                                      bool speculative) {
  const HostPiece& piece = pieces_[index];
  const DType dtype = options_.dtype;
  const int64_t esize = kernels::DTypeSize(dtype);
  const int64_t gsize = kernels::DTypeSize(grads.dtype);
  const int64_t msize = kernels::DTypeSize(state_.master_dtype());
  const int64_t vsize = kernels::DTypeSize(state_.moments_dtype());
  const Buffer& lp = options_.offload_param ? shard_ : staging_.get();
  const int threads = OptimizerThreads(options_.optimizer_threads);
  const int64_t at_host = piece.offset - ctx_.host_begin;
  const int64_t n = piece.elements;
  // The piece's current master and moments (on NVMe, in its window), and
  // the other copies.
  HostState::Set current;
  if (nvme_ != nullptr) {
    ZR_ASSIGN_OR_RETURN(current, nvme_->Acquire(index));
  } else {
    current = state_.Current(index, at_host, n);
  }
  const BufferSlice m = current.master;
  const BufferSlice m1 = current.exp_avg;
  const BufferSlice m2 = current.exp_avg_sq;
  const BufferSlice gs = grads.slice.Sub(at_host * gsize, n * gsize);
  BufferSlice out;
  if (nvme_params_ != nullptr) {
    ZR_ASSIGN_OR_RETURN(out, nvme_params_->WriteWindow(index));
  } else {
    out = lp.Slice(at_host * esize, n * esize);
  }
  // One pass: the update and the new working copy, which the H2D (or the
  // next gather, with offload_param) reads.
  HostTask adam;
  adam.label =
      absl::StrCat(speculative ? "speculative adamw " : "adamw ", piece.name);
  adam.reads = {gs};
  const bool fp32_back = Fp32Back(options_);
  std::vector<BufferSlice> next;
  if (speculative) {
    const HostState::Set other = state_.Other(index, at_host, n);
    next = {other.master, other.exp_avg, other.exp_avg_sq};
    adam.reads.insert(adam.reads.end(), {m, m1, m2});
    adam.writes = next;
  } else {
    adam.writes = {m, m1, m2};
  }
  if (!fp32_back) adam.writes.push_back(out);
  adam.flops = 15.0 * n;
  adam.memory_bytes =
      (2 * state_.bytes_per_element() + gsize + (fp32_back ? 0 : esize)) * n;
  adam.threads = HostTaskThreads(options_);
  adam.run = [&]() -> absl::Status {
    // Each run of equal weight decay (one unless decay is grouped).
    for (const DecayRun& run : piece.runs) {
      const int64_t at = run.offset - piece.offset;
      kernels::AdamWArgs a = args;
      a.n = run.elements;
      a.weight_decay = run.weight_decay;
      auto at_master = [&](const BufferSlice& b) {
        return static_cast<char*>(b.data()) + at * msize;
      };
      auto at_moment = [&](const BufferSlice& b) {
        return static_cast<char*>(b.data()) + at * vsize;
      };
      HostAdamWArrays x;
      x.params = at_master(m);
      x.master_dtype = state_.master_dtype();
      x.grads = static_cast<const char*>(gs.data()) + at * gsize;
      x.grad_dtype = grads.dtype;
      x.exp_avg = at_moment(m1);
      x.exp_avg_sq = at_moment(m2);
      x.moments_dtype = state_.moments_dtype();
      if (speculative) {
        x.params_out = at_master(next[0]);
        x.exp_avg_out = at_moment(next[1]);
        x.exp_avg_sq_out = at_moment(next[2]);
      }
      if (!fp32_back) {
        x.working = static_cast<char*>(out.data()) + at * esize;
        x.working_dtype = dtype;
      }
      HostAdamWStep(a, x, threads);
    }
    return absl::OkStatus();
  };
  return rt_.RunHostTask(adam);
}

// The way back ---------------------------------------------------------------

absl::Status HostOptimizer::WriteBackPiece(int index) {
  const HostPiece& piece = pieces_[index];
  const int64_t at_host = piece.offset - ctx_.host_begin;
  const int64_t n = piece.elements;
  if (Fp32Back(options_)) {
    return WriteBackFp32(state_.First(at_host, n).master, piece.offset, n,
                         piece.name);
  }
  if (options_.offload_param) {
    return nvme_params_ != nullptr ? nvme_params_->Write(index)
                                   : absl::OkStatus();
  }
  if (write_back_ == nullptr) return CopyPieceToDevice(*ctx_.compute, index);
  // Issued by IssueWriteBack, at the start of the next step.
  write_pending_[index] = true;
  return absl::OkStatus();
}

absl::Status HostOptimizer::CopyPieceToDevice(runtime::Stream& s, int index) {
  const HostPiece& piece = pieces_[index];
  const int64_t esize = kernels::DTypeSize(options_.dtype);
  const int64_t n = piece.elements;
  return s.Copy(
      shard_.Slice(piece.offset * esize, n * esize),
      staging_.Slice((piece.offset - ctx_.host_begin) * esize, n * esize),
      absl::StrCat("param H2D ", piece.name));
}

absl::Status HostOptimizer::IssueWriteBack() {
  if (step_ < write_back_step_) return absl::OkStatus();
  // The last step's gathers of the shard are done: the host waited for the
  // reduce stream, which waited for the backward that waited for them.
  for (size_t i = 0; i < write_pending_.size(); ++i) {
    if (!write_pending_[i]) continue;
    write_pending_[i] = false;
    ZR_RETURN_IF_ERROR(CopyPieceToDevice(*write_back_, static_cast<int>(i)));
    ZR_RETURN_IF_ERROR(write_back_->Record(*piece_written_[i]));
  }
  return absl::OkStatus();
}

absl::Status HostOptimizer::WriteBackFp32(const BufferSlice& master,
                                          int64_t offset, int64_t n,
                                          const std::string& name) {
  // On the compute stream, so the next piece's copy into the same device
  // buffer follows this piece's cast.
  runtime::Stream& compute = *ctx_.compute;
  ZR_RETURN_IF_ERROR(compute.Copy(writeback_.Slice(0, n * 4), master,
                                  absl::StrCat("fp32 param H2D ", name)));
  return compute.Launch(KernelCall(
      ops::Cast::Of(TensorRef::Of(writeback_, DType::kF32, 0, n),
                    TensorRef::Of(shard_, options_.dtype, offset, n)),
      absl::StrCat("cast ", name)));
}

std::vector<ParamCoordinator::PendingWrite> HostOptimizer::PendingWrites()
    const {
  std::vector<ParamCoordinator::PendingWrite> writes;
  if (write_back_ == nullptr) return writes;
  for (size_t i = 0; i < pieces_.size(); ++i) {
    writes.push_back(
        {pieces_[i].offset, pieces_[i].elements, piece_written_[i].get()});
  }
  return writes;
}

}  // namespace zero
}  // namespace zero3
