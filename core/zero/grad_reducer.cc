// Copyright 2026 The zero3 Authors.

#include "core/zero/grad_reducer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace zero {

using runtime::AllocateDevice;
using runtime::AllocateHost;
using runtime::DType;
using runtime::HostMemoryKind;
using runtime::KernelCall;
using runtime::TensorRef;
namespace ops = runtime::ops;

GradReducer::GradReducer(const ZeroContext& ctx) : ctx_(ctx) {}

absl::StatusOr<std::unique_ptr<GradReducer>> GradReducer::Create(
    const ZeroContext& ctx, const std::vector<model::ModuleInfo>& modules) {
  std::unique_ptr<GradReducer> r(new GradReducer(ctx));
  ZR_RETURN_IF_ERROR(r->Init(modules));
  return r;
}

GradReducer::SlotPlan GradReducer::PlanSlots(
    const ShardLayout& layout, const std::vector<model::ModuleInfo>& modules) {
  const int n = layout.num_params();
  // Parameters used by more than one module keep a buffer of their own.
  std::vector<int> uses(n, 0);
  for (const model::ModuleInfo& m : modules) {
    for (int p : m.params) ++uses[p];
  }
  SlotPlan plan;
  plan.slot_offset.assign(n, 0);
  plan.shared.assign(n, false);
  for (int p = 0; p < n; ++p) plan.shared[p] = uses[p] > 1;
  for (const model::ModuleInfo& m : modules) {
    int64_t offset = 0;
    for (int p : m.params) {
      if (plan.shared[p]) continue;
      plan.slot_offset[p] = offset;
      offset += layout.param(p).padded;
    }
    plan.slot_elements = std::max(plan.slot_elements, offset);
  }
  return plan;
}

int64_t GradReducer::MaxBucketRow(const std::vector<ParamRange>& buckets) {
  int64_t max_row = 1;
  for (const ParamRange& r : buckets) max_row = std::max(max_row, r.elements);
  return max_row;
}

GradReducer::DeviceFootprint GradReducer::DeviceBytes(
    const ZeroOptions& options, DType dtype, const ShardLayout& layout,
    const std::vector<model::ModuleInfo>& modules) {
  const int64_t esize = kernels::DTypeSize(dtype);
  const int64_t w = layout.data_parallel_size();
  const SlotPlan plan = PlanSlots(layout, modules);
  DeviceFootprint f;
  // The two slots and the shared parameters' buffers.
  f.fixed_bytes = 2 * std::max<int64_t>(1, plan.slot_elements) * esize;
  for (int p = 0; p < layout.num_params(); ++p) {
    if (plan.shared[p]) f.fixed_bytes += layout.param(p).padded * esize;
  }
  // The reduction bucket and the reduced chunk.
  const int64_t max_row =
      MaxBucketRow(layout.Buckets(options.reduce_bucket_size));
  f.fixed_bytes += max_row * w * esize + max_row * esize;
  // The fp32 partition (see Init).
  if (StraightToHost(options, dtype)) {
    f.bytes_per_device_element = 4;
  } else {
    f.fixed_bytes += layout.total() * 4;
  }
  // The norm: this rank's pair and every rank's.
  f.fixed_bytes += 8 + 8 * w;
  if (RoundTripApplies(options)) f.fixed_bytes += MaxPartition(layout) * esize;
  return f;
}

bool GradReducer::RoundTripApplies(const ZeroOptions& options) {
  return options.per_param_fp32_grads && options.offload_optimizer;
}

int64_t GradReducer::MaxPartition(const ShardLayout& layout) {
  int64_t n = 1;
  for (int p = 0; p < layout.num_params(); ++p) {
    n = std::max(n, layout.param(p).partition);
  }
  return n;
}

absl::Status GradReducer::Init(const std::vector<model::ModuleInfo>& modules) {
  const ShardLayout& layout = *ctx_.layout;
  const int n = layout.num_params();
  const int64_t esize = kernels::DTypeSize(ctx_.dtype);
  runtime::Device& dev = ctx_.rt->device();

  SlotPlan plan = PlanSlots(layout, modules);
  slot_offset_ = std::move(plan.slot_offset);
  slot_elements_ = plan.slot_elements;
  shared_.assign(n, -1);
  for (int p = 0; p < n; ++p) {
    if (!plan.shared[p]) continue;
    shared_[p] = static_cast<int>(dedicated_.size());
    dedicated_.emplace_back();
    Slot& s = dedicated_.back();
    ZR_ASSIGN_OR_RETURN(
        s.buffer, AllocateDevice(dev, layout.param(p).padded * esize,
                                 absl::StrCat("gradient of shared param ", p)));
    ZR_ASSIGN_OR_RETURN(s.copied_out, dev.CreateEvent());
  }
  for (Slot& s : slots_) {
    ZR_ASSIGN_OR_RETURN(
        s.buffer,
        AllocateDevice(dev, std::max<int64_t>(1, slot_elements_) * esize,
                       "gradient slot"));
    ZR_ASSIGN_OR_RETURN(s.copied_out, dev.CreateEvent());
  }

  buckets_ = layout.Buckets(ctx_.options->reduce_bucket_size);
  bucket_of_.assign(n, -1);
  offset_in_bucket_.assign(n, 0);
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
    const ParamRange& r = buckets_[b];
    for (int p = r.first; p <= r.last; ++p) {
      bucket_of_[p] = b;
      offset_in_bucket_[p] = layout.param(p).offset - r.offset;
    }
  }
  const int64_t max_row = MaxBucketRow(buckets_);
  const int w = layout.data_parallel_size();
  ZR_ASSIGN_OR_RETURN(
      bucket_, AllocateDevice(dev, max_row * w * esize, "reduce bucket"));
  ZR_ASSIGN_OR_RETURN(
      reduced_, AllocateDevice(dev, max_row * esize, "reduced bucket chunk"));
  // Without accumulation there is nothing to accumulate in fp32: with the
  // optimizer on the host, each reduced chunk goes to the host as it is, in
  // the model's dtype, which halves the PCIe traffic of fp32 and saves the
  // device partition. The values are the same, so the step is too.
  direct_to_host_ = StraightToHost(*ctx_.options, ctx_.dtype);
  host_dtype_ = direct_to_host_ ? ctx_.dtype : DType::kF32;
  // The fp32 partition on the device: all of it where micro-steps
  // accumulate or the optimizer is on the device, else the device share of
  // the optimizer's (offload_optimizer.ratio below 1).
  const int64_t device_elements =
      direct_to_host_ ? ctx_.host_begin : layout.total();
  if (device_elements > 0) {
    ZR_ASSIGN_OR_RETURN(
        partition_,
        AllocateDevice(dev, device_elements * 4, "gradient partition (fp32)"));
  }
  // Each rank's sum of squares as [hi, lo] (see ops::SumSquares), and
  // every rank's, gathered: summing them on the host in double keeps the
  // norm independent of the sharding up to double rounding.
  ZR_ASSIGN_OR_RETURN(norm_device_,
                      AllocateDevice(dev, 8, "gradient norm squared"));
  ZR_ASSIGN_OR_RETURN(norm_gathered_,
                      AllocateDevice(dev, 8 * layout.data_parallel_size(),
                                     "gathered norm squared"));
  ZR_ASSIGN_OR_RETURN(
      norm_host_,
      AllocateHost(*ctx_.rt, 8 * layout.data_parallel_size(),
                   HostMemoryKind::kPinned, "gradient norm squared (host)"));
  if (ctx_.options->offload_optimizer && ctx_.host_elements() > 0) {
    runtime::OwnedBuffer* copies[] = {&host_partition_, &other_host_partition_};
    const int n = HostStepPlanOf(*ctx_.options).delayed ? 2 : 1;
    for (int i = 0; i < n; ++i) {
      ZR_ASSIGN_OR_RETURN(
          *copies[i],
          AllocateHost(
              *ctx_.rt, ctx_.host_elements() * kernels::DTypeSize(host_dtype_),
              ctx_.options->optimizer_pin_memory ? HostMemoryKind::kPinned
                                                 : HostMemoryKind::kPageable,
              absl::StrCat("host gradients (", kernels::DTypeName(host_dtype_),
                           i == 0 ? ")" : ", second)")));
    }
  }
  if (RoundTripApplies(*ctx_.options) && ctx_.host_elements() > 0) {
    ZR_ASSIGN_OR_RETURN(
        round_trip_host_,
        AllocateHost(
            *ctx_.rt, ctx_.host_elements() * esize,
            ctx_.options->optimizer_pin_memory ? HostMemoryKind::kPinned
                                               : HostMemoryKind::kPageable,
            absl::StrCat("host gradients (", kernels::DTypeName(ctx_.dtype),
                         ", DeepSpeed's round trip)")));
  }
  if (RoundTripApplies(*ctx_.options)) {
    ZR_ASSIGN_OR_RETURN(
        round_trip_device_,
        AllocateDevice(dev, MaxPartition(layout) * esize,
                       "gradient brought back (DeepSpeed's round trip)"));
  }
  ZR_ASSIGN_OR_RETURN(ready_, dev.CreateEvent());
  if (StreamsSpeculatively(ctx_)) {
    partition_final_.resize(buckets_.size());
    for (auto& e : partition_final_) {
      ZR_ASSIGN_OR_RETURN(e, dev.CreateEvent());
    }
  }
  if (HostStepPlanOf(*ctx_.options).speculative) {
    offloaded_.resize(buckets_.size());
    for (auto& e : offloaded_) {
      ZR_ASSIGN_OR_RETURN(e, dev.CreateEvent());
    }
    ZR_ASSIGN_OR_RETURN(
        norm_running_host_,
        AllocateHost(*ctx_.rt, 8 * buckets_.size(), HostMemoryKind::kPinned,
                     "running grad norm squared (host)"));
  }
  ZR_CHECK_EQ(DeviceBytesAllocated(),
              DeviceBytes(*ctx_.options, ctx_.dtype, layout, modules)
                  .Bytes(ctx_.host_begin))
      << "GradReducer::DeviceBytes does not match Init's allocations";
  return absl::OkStatus();
}

int64_t GradReducer::DeviceBytesAllocated() const {
  int64_t bytes = 0;
  for (const Slot& s : slots_) bytes += s.buffer.bytes();
  for (const Slot& s : dedicated_) bytes += s.buffer.bytes();
  for (const runtime::OwnedBuffer* b :
       {&bucket_, &reduced_, &partition_, &norm_device_, &norm_gathered_,
        &round_trip_device_}) {
    bytes += b->bytes();
  }
  return bytes;
}

bool GradReducer::StraightToHost(const ZeroOptions& options, DType dtype) {
  return options.offload_optimizer && options.accumulation == 1 &&
         dtype != DType::kF32 && !options.per_param_fp32_grads;
}

TensorRef GradReducer::device_partition() const {
  ZR_CHECK(partition_.valid())
      << "no device gradient partition: gradients go straight to the host";
  return TensorRef::Of(partition_, DType::kF32, 0, partition_.bytes() / 4);
}
TensorRef GradReducer::host_partition() const {
  return TensorRef::Of(host_partition_, host_dtype_, 0, ctx_.host_elements());
}
void GradReducer::SwapHostPartition() {
  ZR_CHECK(other_host_partition_.valid())
      << "one host gradient partition: no delayed update";
  std::swap(host_partition_, other_host_partition_);
}
TensorRef GradReducer::host_norm_squared() const {
  return TensorRef::Of(norm_host_, DType::kF32, 0,
                       2 * ctx_.data_parallel_size());
}
TensorRef GradReducer::running_norm_squared(int b) const {
  ZR_CHECK(norm_running_host_.valid()) << "no speculative step";
  return TensorRef::Of(norm_running_host_, DType::kF32, 2 * b, 2);
}
bool GradReducer::host_buffer_pinned() const {
  return host_partition_.space() == runtime::MemorySpace::kPinnedHost;
}

absl::Status GradReducer::BeginBackward(int micro, bool boundary,
                                        bool speculative) {
  ZR_CHECK(!in_backward_) << "BeginBackward twice";
  ZR_CHECK(!speculative || (boundary && norm_running_host_.valid()))
      << "a speculative backward needs the boundary and the speculative step";
  in_backward_ = true;
  micro_ = micro;
  boundary_ = boundary;
  speculative_ = speculative;
  next_param_ = ctx_.layout->num_params() - 1;
  next_bucket_ = 0;
  modules_seen_ = 0;
  if (boundary_) {
    ops::Fill zero;
    zero.args.n = 2;
    zero.x = TensorRef::Of(norm_device_, DType::kF32, 0, 2);
    ZR_RETURN_IF_ERROR(ctx_.reduce->Launch(KernelCall(zero, "zero grad norm")));
  }
  return absl::OkStatus();
}

absl::Status GradReducer::WaitSlot(Slot& slot) {
  if (slot.pending) {
    if (ctx_.sync(Sync::kGradSlotReuse)) {
      ZR_RETURN_IF_ERROR(ctx_.compute->Wait(*slot.copied_out));
    }
    slot.pending = false;
  }
  return absl::OkStatus();
}

absl::Status GradReducer::BeginModule(int module) {
  current_slot_ = modules_seen_++ % 2;
  slot_waited_ = false;
  return absl::OkStatus();
}

absl::StatusOr<TensorRef> GradReducer::Grad(int param) {
  const ParamShard& s = ctx_.layout->param(param);
  if (shared_[param] >= 0) {
    Slot& slot = dedicated_[shared_[param]];
    ZR_RETURN_IF_ERROR(WaitSlot(slot));
    return TensorRef::Of(slot.buffer, ctx_.dtype, 0, s.numel);
  }
  Slot& slot = slots_[current_slot_];
  if (!slot_waited_) {
    ZR_RETURN_IF_ERROR(WaitSlot(slot));
    slot_waited_ = true;
  }
  return TensorRef::Of(slot.buffer, ctx_.dtype, slot_offset_[param], s.numel);
}

absl::Status GradReducer::GradsReady(absl::Span<const int> params) {
  ZR_RETURN_IF_ERROR(IssueReady());
  const ShardLayout& layout = *ctx_.layout;
  std::vector<int> order(params.begin(), params.end());
  std::sort(order.rbegin(), order.rend());
  // Backward leaves the padding tail of each gradient unwritten; it must be
  // zero before the tail is reduced into the last ranks' partitions.
  for (int p : order) {
    const ParamShard& s = layout.param(p);
    if (s.padded <= s.numel) continue;
    const TensorRef g =
        shared_[p] >= 0 ? TensorRef::Of(dedicated_[shared_[p]].buffer,
                                        ctx_.dtype, 0, s.padded)
                        : TensorRef::Of(slots_[current_slot_].buffer,
                                        ctx_.dtype, slot_offset_[p], s.padded);
    ZR_RETURN_IF_ERROR(
        ctx_.compute->Memset(g.Elements(s.numel, s.padded - s.numel).slice, 0,
                             absl::StrCat("zero gradient padding ", p)));
  }
  ZR_RETURN_IF_ERROR(ctx_.compute->Record(*ready_));
  ready_params_ = std::move(order);
  ready_slot_ = current_slot_;
  return absl::OkStatus();
}

absl::Status GradReducer::IssueReady() {
  if (ready_params_.empty()) return absl::OkStatus();
  const std::vector<int> order = std::move(ready_params_);
  ready_params_.clear();
  const ShardLayout& layout = *ctx_.layout;
  const int64_t esize = kernels::DTypeSize(ctx_.dtype);
  if (ctx_.sync(Sync::kGradsReadyBeforeReduce)) {
    ZR_RETURN_IF_ERROR(ctx_.reduce->Wait(*ready_));
  }
  const int w = layout.data_parallel_size();
  bool uses_slot = false;
  for (int p : order) {
    if (p != next_param_) {
      return absl::InternalError(absl::StrCat(
          "gradient of parameter ", p, " ready out of order: expected ",
          next_param_, " (gradients must complete in descending id order)"));
    }
    --next_param_;
    const ParamShard& s = layout.param(p);
    const int b = bucket_of_[p];
    const ParamRange& bucket = buckets_[b];
    uses_slot = uses_slot || shared_[p] < 0;
    const runtime::Buffer& src = shared_[p] >= 0 ? dedicated_[shared_[p]].buffer
                                                 : slots_[ready_slot_].buffer;
    const int64_t src_offset = shared_[p] >= 0 ? 0 : slot_offset_[p];
    // Row r of the gradient (elements [r·P, (r+1)·P)) goes to row r of the
    // bucket, at this parameter's offset within the bucket's rows.
    ZR_RETURN_IF_ERROR(ctx_.reduce->Copy2D(
        bucket_.Slice(offset_in_bucket_[p] * esize,
                      ((w - 1) * bucket.elements + s.partition) * esize),
        bucket.elements * esize,
        src.Slice(src_offset * esize, s.padded * esize), s.partition * esize,
        s.partition * esize, w, absl::StrCat("bucket param ", p)));
    if (p == bucket.first) ZR_RETURN_IF_ERROR(Flush(b));
  }
  if (uses_slot) {
    ZR_RETURN_IF_ERROR(ctx_.reduce->Record(*slots_[ready_slot_].copied_out));
    slots_[ready_slot_].pending = true;
  }
  for (int p : order) {
    if (shared_[p] >= 0) {
      Slot& slot = dedicated_[shared_[p]];
      ZR_RETURN_IF_ERROR(ctx_.reduce->Record(*slot.copied_out));
      slot.pending = true;
    }
  }
  return absl::OkStatus();
}

absl::Status GradReducer::Flush(int b) {
  ZR_CHECK_EQ(b, next_bucket_) << "buckets flush in order";
  ++next_bucket_;
  const ShardLayout& layout = *ctx_.layout;
  const ParamRange& bucket = buckets_[b];
  const int w = layout.data_parallel_size();
  runtime::Stream& s = *ctx_.reduce;
  // The host work of the parameters RoundTripParam does not handle: all of
  // the bucket's in the bucketed path, the device share's in DeepSpeed's.
  ZR_RETURN_IF_ERROR(HostWork(
      (round_trip_host_.valid() ? FirstHostParam(bucket) : bucket.last + 1) -
      bucket.first));
  const TensorRef all =
      TensorRef::Of(bucket_, ctx_.dtype, 0, bucket.elements * w);
  TensorRef mine = TensorRef::Of(reduced_, ctx_.dtype, 0, bucket.elements);
  if (w > 1) {
    // Average as DeepSpeed does: divide each rank's contribution by W, then
    // sum.
    ops::Scale scale;
    scale.args.n = all.elements();
    scale.args.alpha = 1.0f / static_cast<float>(w);
    scale.x = all;
    ZR_RETURN_IF_ERROR(
        s.Launch(KernelCall(scale, absl::StrCat("pre-divide bucket ", b))));
    ZR_RETURN_IF_ERROR(ctx_.dp->ReduceScatter(
        s, all, mine, absl::StrCat("reduce-scatter bucket ", b)));
  } else {
    mine = all;
  }
  if (direct_to_host_) {
    ZR_CHECK(micro_ == 0 && boundary_) << "direct offload without accumulation";
    // The device share of the optimizer reads fp32 from the partition.
    const int64_t device_n =
        std::min(bucket.elements, ctx_.host_begin - bucket.offset);
    if (device_n > 0) {
      ZR_RETURN_IF_ERROR(s.Launch(KernelCall(
          ops::Cast::Of(
              mine.Elements(0, device_n),
              TensorRef::Of(partition_, DType::kF32, bucket.offset, device_n)),
          absl::StrCat("partition = bucket ", b))));
    }
    return NormAndOffload(b, mine, mine);
  }
  if (round_trip_host_.valid() && !boundary_) {
    ZR_RETURN_IF_ERROR(RoundTrip(b, mine));
  }
  const TensorRef part =
      TensorRef::Of(partition_, DType::kF32, bucket.offset, bucket.elements);
  if (micro_ == 0) {
    ZR_RETURN_IF_ERROR(s.Launch(KernelCall(
        ops::Cast::Of(mine, part), absl::StrCat("partition = bucket ", b))));
  } else {
    ops::Accumulate acc;
    acc.args.n = bucket.elements;
    acc.x = mine;
    acc.y = part;
    ZR_RETURN_IF_ERROR(
        s.Launch(KernelCall(acc, absl::StrCat("partition += bucket ", b))));
  }
  if (!boundary_) return absl::OkStatus();
  return NormAndOffload(b, part, mine);
}

absl::Status GradReducer::NormAndOffload(int b, const TensorRef& part,
                                         const TensorRef& mine) {
  const ParamRange& bucket = buckets_[b];
  runtime::Stream& s = *ctx_.reduce;
  ops::SumSquares norm;
  norm.args.n = bucket.elements;
  norm.x = part;
  norm.out = TensorRef::Of(norm_device_, DType::kF32, 0, 2);
  norm.accumulate = true;
  ZR_RETURN_IF_ERROR(
      s.Launch(KernelCall(norm, absl::StrCat("norm of bucket ", b))));
  if (!partition_final_.empty()) {
    ZR_RETURN_IF_ERROR(s.Record(*partition_final_[b]));
  }

  // The host share of the bucket: [begin, end) of the flat layout.
  const int64_t begin = std::max(bucket.offset, ctx_.host_begin);
  const int64_t end = bucket.offset + bucket.elements;
  if (!ctx_.options->offload_optimizer || begin >= end) {
    return absl::OkStatus();
  }
  if (speculative_) {
    // The running norm, read by the speculative step's early abort.
    ZR_RETURN_IF_ERROR(
        s.Copy(running_norm_squared(b).slice, norm_device_.All(),
               absl::StrCat("running grad norm D2H bucket ", b)));
  }
  ZR_RETURN_IF_ERROR(Offload(b, part, mine, begin, end));
  if (offloaded_.empty()) return absl::OkStatus();
  return s.Record(*offloaded_[b]);
}

absl::Status GradReducer::Offload(int b, const TensorRef& part,
                                  const TensorRef& mine, int64_t begin,
                                  int64_t end) {
  const ShardLayout& layout = *ctx_.layout;
  const ParamRange& bucket = buckets_[b];
  runtime::Stream& s = *ctx_.reduce;
  const TensorRef host =
      host_partition().Elements(begin - ctx_.host_begin, end - begin);
  const TensorRef src = part.Elements(begin - bucket.offset, end - begin);
  const bool blocking = ctx_.options->grad_offload == GradOffload::kBlocking;
  if (!blocking && !ctx_.options->per_param_fp32_grads) {
    ZR_RETURN_IF_ERROR(
        s.Copy(host.slice, src.slice, absl::StrCat("grad D2H bucket ", b)));
    return absl::OkStatus();
  }
  // DeepSpeed: fp32_grad.copy_(grad) per parameter, non_blocking since
  // 2026, else a copy followed by a synchronize of the current (reduce)
  // stream.
  for (int p = bucket.last; p >= bucket.first; --p) {
    const ParamShard& ps = layout.param(p);
    if (ps.offset < begin) break;
    const int64_t at = ps.offset - begin;
    if (round_trip_host_.valid()) {
      ZR_RETURN_IF_ERROR(RoundTripParam(
          p, mine.Elements(ps.offset - bucket.offset, ps.partition)));
    }
    ZR_RETURN_IF_ERROR(s.Copy(host.Elements(at, ps.partition).slice,
                              src.Elements(at, ps.partition).slice,
                              absl::StrCat("grad D2H param ", p)));
    if (blocking) ZR_RETURN_IF_ERROR(s.Synchronize());
  }
  return absl::OkStatus();
}

absl::Status GradReducer::HostWork(int params) {
  if (ctx_.options->host_work_per_grad_ns <= 0 || params <= 0) {
    return absl::OkStatus();
  }
  runtime::HostTask work;
  work.label = absl::StrCat("host work for ", params, " gradients");
  work.fixed_nanos =
      ctx_.options->host_work_per_grad_ns * static_cast<int64_t>(params);
  return ctx_.rt->RunHostTask(work);
}

int GradReducer::FirstHostParam(const ParamRange& bucket) const {
  int p = bucket.last;
  while (p >= bucket.first && ctx_.layout->param(p).offset >= ctx_.host_begin) {
    --p;
  }
  return p + 1;
}

absl::Status GradReducer::RoundTrip(int b, const TensorRef& mine) {
  const ParamRange& bucket = buckets_[b];
  const int first = FirstHostParam(bucket);
  for (int p = bucket.last; p >= first; --p) {
    const ParamShard& ps = ctx_.layout->param(p);
    ZR_RETURN_IF_ERROR(RoundTripParam(
        p, mine.Elements(ps.offset - bucket.offset, ps.partition)));
  }
  return absl::OkStatus();
}

absl::Status GradReducer::RoundTripParam(int p, const TensorRef& grad) {
  const ParamShard& ps = ctx_.layout->param(p);
  runtime::Stream& s = *ctx_.reduce;
  ZR_RETURN_IF_ERROR(HostWork(1));
  const TensorRef h = TensorRef::Of(round_trip_host_, ctx_.dtype,
                                    ps.offset - ctx_.host_begin, ps.partition);
  const TensorRef d =
      TensorRef::Of(round_trip_device_, ctx_.dtype, 0, ps.partition);
  if (micro_ == 0) {
    // grad_buffer.copy_(grad_partition); grad_buffer.to(device)
    ZR_RETURN_IF_ERROR(
        s.Copy(h.slice, grad.slice,
               absl::StrCat("grad D2H to DeepSpeed's buffer param ", p)));
    return s.Copy(d.slice, h.slice, absl::StrCat("grad H2D back param ", p));
  }
  // cuda_buffer = grad_buffer.to(device); add; grad_buffer.copy_(...)
  ZR_RETURN_IF_ERROR(
      s.Copy(d.slice, h.slice, absl::StrCat("grad H2D to add param ", p)));
  return s.Copy(h.slice, d.slice,
                absl::StrCat("grad D2H to DeepSpeed's buffer param ", p));
}

absl::Status GradReducer::EndBackward() {
  ZR_RETURN_IF_ERROR(FinishBackward());
  return WaitForOffload();
}

absl::Status GradReducer::FinishBackward() {
  ZR_CHECK(in_backward_) << "EndBackward without BeginBackward";
  ZR_RETURN_IF_ERROR(IssueReady());
  in_backward_ = false;
  if (next_param_ != -1 || next_bucket_ != static_cast<int>(buckets_.size())) {
    return absl::InternalError(absl::StrCat(
        "backward ended with gradients missing: next expected parameter ",
        next_param_, ", ", buckets_.size() - next_bucket_,
        " buckets not reduced"));
  }
  if (!boundary_) return absl::OkStatus();
  runtime::Stream& s = *ctx_.reduce;
  const TensorRef norm = TensorRef::Of(norm_device_, DType::kF32, 0, 2);
  const runtime::Buffer* all = &norm_device_.get();
  if (ctx_.data_parallel_size() > 1) {
    ZR_RETURN_IF_ERROR(
        ctx_.dp->AllGather(s, norm,
                           TensorRef::Of(norm_gathered_, DType::kF32, 0,
                                         2 * ctx_.data_parallel_size()),
                           "all-gather grad norm"));
    all = &norm_gathered_.get();
  }
  return s.Copy(norm_host_.All(), all->All(), "grad norm D2H");
}

absl::Status GradReducer::WaitForOffload() {
  if (!boundary_) return absl::OkStatus();
  runtime::Stream& s = *ctx_.reduce;
  // The synchronization that makes the asynchronous gradient copies (and the
  // norm) safe for the host to read.
  if (ctx_.sync(Sync::kGradOffloadBeforeStep)) {
    ZR_RETURN_IF_ERROR(s.Synchronize());
  }
  return absl::OkStatus();
}

}  // namespace zero
}  // namespace zero3
