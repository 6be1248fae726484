// Copyright 2026 The zero3 Authors.
//
// grad_reducer.h: from the gradients backward produces to this rank's fp32
// gradient partition (and, with offload_optimizer, to host memory).
//
// Backward writes each module's gradients into one of two device slots
// (double-buffered; a parameter used by several modules, such as a tied
// embedding, gets a buffer of its own). When a module's gradients are ready
// and the next module's all-gathers are issued (IssueReady), the reduce
// stream waits for them (grads-ready-before-reduce) and copies
// each one, as W rows of its partition size, into the reduction bucket,
// which holds its parameters rank-major. A slot is overwritten only after
// the reduce stream has copied it out (grad-slot-reuse).
//
// Buckets are planned once, in the order gradients become ready (descending
// parameter ids), reduce_bucket_size elements each. When a bucket's last
// gradient is in, the bucket is divided by W (DeepSpeed pre-divides),
// reduce-scattered, and this rank's chunk - a contiguous range of the flat
// partition layout - is copied (first micro-step) or added (later ones) into
// the fp32 gradient partition on the device. Keeping the accumulator on the
// device, rather than on the host as DeepSpeed does, saves a D2H and an H2D
// per micro-step.
//
// At the accumulation boundary each bucket's partition range also adds its
// sum of squares to a device norm accumulator and, with offload_optimizer,
// is copied to the host gradient buffer (in the model's dtype, straight from
// the reduced chunk, when there is no accumulation - the fp32 partition
// would only hold the same values twice as wide): asynchronously when that
// buffer is pinned, blocking the host when it is pageable (the driver stages
// it), or - grad_offload: blocking, DeepSpeed's old behaviour - one
// blocking copy per parameter followed by a stream synchronize. When the
// boundary backward speculates, the running sum of squares goes to the host
// with each such copy (the speculative step's early abort reads it). At the end
// of the boundary backward the norm is all-reduced and copied to the host,
// and the host waits for the reduce stream: the grad-offload-before-step
// synchronization, the one point that makes the asynchronous copies safe to
// read.
//
// Owns the slots, bucket buffers, device partition, host gradient buffer and
// events; destroy it only when the device is done with them (the engine
// synchronizes first). Not thread-safe.

#ifndef ZERO3_CORE_ZERO_GRAD_REDUCER_H_
#define ZERO3_CORE_ZERO_GRAD_REDUCER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/model/transformer.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"
#include "core/zero/context.h"

namespace zero3 {
namespace zero {

class GradReducer {
 public:
  static absl::StatusOr<std::unique_ptr<GradReducer>> Create(
      const ZeroContext& ctx, const std::vector<model::ModuleInfo>& modules);

  // Whether the reduced gradients of the host share go to the host in the
  // model's dtype without an fp32 device copy: with offload_optimizer, no
  // accumulation and a 16-bit dtype. Otherwise the reducer keeps an fp32
  // partition of all elements on the device.
  static bool StraightToHost(const ZeroOptions& options, runtime::DType dtype);

  // The device memory Create allocates: `fixed_bytes` whatever the device
  // share of the optimizer, plus `bytes_per_device_element` per element of
  // that share (ZeroContext::host_begin): the fp32 gradient partition
  // where the gradients go straight to the host (StraightToHost).
  struct DeviceFootprint {
    int64_t fixed_bytes = 0;
    int64_t bytes_per_device_element = 0;
    // The bytes for a device share of `host_begin` elements.
    int64_t Bytes(int64_t host_begin) const {
      return fixed_bytes + bytes_per_device_element * host_begin;
    }
  };
  // The device memory a reducer for `options`, the model's `dtype`,
  // `layout` and `modules` allocates (the engine plans its optimizer's
  // device share with it, before the reducer exists).
  static DeviceFootprint DeviceBytes(
      const ZeroOptions& options, runtime::DType dtype,
      const ShardLayout& layout, const std::vector<model::ModuleInfo>& modules);

  // Starts a backward pass; `micro` counts from 0 within the accumulation
  // window; `boundary` is its last micro-step; `speculative` (at the
  // boundary, with the speculative step) copies the running norm to the
  // host with each bucket (running_norm_squared).
  absl::Status BeginBackward(int micro, bool boundary, bool speculative);
  absl::Status BeginModule(int module);
  absl::StatusOr<runtime::TensorRef> Grad(int param);
  // The gradients of `params` are written (on the compute stream). Zeroes
  // their padding and marks them ready; the reduce stream's share (copies
  // into the bucket, the reduce-scatter of every bucket they complete) waits
  // for IssueReady, so that the engine can issue the next module's
  // all-gathers first: NCCL runs one communicator's collectives in issue
  // order, and a reduce-scatter issued first would hold back the gathers
  // behind it until this module's gradients are done.
  absl::Status GradsReady(absl::Span<const int> params);
  // Issues the reduce stream's share of the last GradsReady, if not yet
  // issued. GradsReady and FinishBackward call it first; the engine calls it
  // once the next module's gathers are issued.
  absl::Status IssueReady();
  // Flushes what is left, and at the boundary finishes the norm and
  // synchronizes the host with the reduce stream: FinishBackward, then
  // WaitForOffload.
  absl::Status EndBackward();
  // EndBackward's first half: checks that every bucket was reduced and, at
  // the boundary, issues the norm's all-gather and copy to the host.
  absl::Status FinishBackward();
  // EndBackward's second half, at the boundary: the host waits for the
  // reduce stream (grad-offload-before-step).
  absl::Status WaitForOffload();

  // The buckets, in the order they are reduced (descending offsets).
  const std::vector<ParamRange>& buckets() const { return buckets_; }
  // How many buckets of the current backward have been issued (reduced and,
  // at the boundary, offloaded): buckets 0 .. buckets_issued() - 1.
  int buckets_issued() const { return next_bucket_; }
  // With the speculative step (HostStepPlanOf: speculative): recorded on the
  // reduce stream at the boundary once bucket `b`'s gradients are copied to the
  // host. Null otherwise.
  runtime::Event* offloaded(int b) const {
    return offloaded_.empty() ? nullptr : offloaded_[b].get();
  }
  // With the streamed elements stepped speculatively
  // (StreamsSpeculatively): recorded on the reduce stream at the boundary
  // once bucket `b`'s part of the fp32 device partition is final. Null
  // otherwise.
  runtime::Event* partition_final(int b) const {
    return partition_final_.empty() ? nullptr : partition_final_[b].get();
  }
  // With the speculative step, after a backward begun `speculative`: pinned
  // host memory holding, once offloaded(b) has completed, this rank's
  // running sum of squares [hi, lo] after bucket
  // `b` of the boundary backward (its own partition only, buckets 0..b): a
  // lower bound of the global sum of squares, which only grows. Copied on
  // the reduce stream before offloaded(b) is recorded, so the
  // speculative-grads-on-host wait covers it.
  runtime::TensorRef running_norm_squared(int b) const;

  // fp32: the accumulated gradient partition, on the device, indexed by
  // flat-layout offset: [layout.total()], or [ctx.host_begin] when the
  // reduced gradients of the host share go to the host directly (below).
  runtime::TensorRef device_partition() const;
  // The host share's gradients (offload_optimizer only), [host_elements()]
  // indexed by flat-layout offset minus ctx.host_begin: fp32, or the model's
  // dtype when there is no accumulation (accumulation == 1), where the
  // reduced gradients go to the host without a device fp32 copy.
  runtime::TensorRef host_partition() const;
  // With the one-step delayed update (HostStepPlanOf: delayed): the next
  // boundary backward offloads into the other of two host partitions, and
  // host_partition() names that one; the one it named keeps the gradients
  // the delayed update reads meanwhile.
  void SwapHostPartition();
  // Pinned host memory holding every rank's sum of squares of its gradient
  // partition after the boundary backward: W pairs [hi, lo] of fp32 whose
  // double sums add up to the global sum of squares.
  runtime::TensorRef host_norm_squared() const;
  bool host_buffer_pinned() const;

 private:
  struct Slot {
    runtime::OwnedBuffer buffer;
    std::unique_ptr<runtime::Event> copied_out;
    bool pending = false;  // copied_out was recorded and not yet waited on
  };

  // How gradients sit in the device slots: per parameter, its offset in a
  // slot, or (shared: used by several modules) a buffer of its own.
  struct SlotPlan {
    std::vector<int64_t> slot_offset;  // per parameter (non-shared)
    std::vector<bool> shared;          // per parameter
    int64_t slot_elements = 0;         // the largest module's, shared aside
  };
  static SlotPlan PlanSlots(const ShardLayout& layout,
                            const std::vector<model::ModuleInfo>& modules);
  // The elements of the longest bucket row (at least 1): the reduction
  // bucket holds W of them, the reduced chunk one.
  static int64_t MaxBucketRow(const std::vector<ParamRange>& buckets);

  explicit GradReducer(const ZeroContext& ctx);
  absl::Status Init(const std::vector<model::ModuleInfo>& modules);
  absl::Status Flush(int bucket);
  // At the boundary: adds the bucket's partition range `part` to the norm
  // and, with offload_optimizer, copies it to the host (`mine`: the bucket's
  // reduced values in the model's dtype, for RoundTripParam).
  absl::Status NormAndOffload(int bucket, const runtime::TensorRef& part,
                              const runtime::TensorRef& mine);
  // NormAndOffload's copy of the host share [begin, end) of `part`.
  absl::Status Offload(int bucket, const runtime::TensorRef& part,
                       const runtime::TensorRef& mine, int64_t begin,
                       int64_t end);
  // options.host_work_per_grad_ns for `params` gradients, on the host
  // thread: per parameter in DeepSpeed's path (RoundTripParam, the host
  // share), once per bucket for the rest (Flush).
  absl::Status HostWork(int params);
  // The bucket's first parameter in the host share (parameters after it are
  // too); bucket.last + 1 where none is.
  int FirstHostParam(const ParamRange& bucket) const;
  // per_param_fp32_grads with offload_optimizer: the round trip DeepSpeed's
  // partition_grads makes with each host-share parameter's reduced gradient
  // through its host gradient buffer in the model's dtype: at the first
  // micro-step a copy to the host and back to a device buffer, at later
  // ones back to the device (to add to) and to the host again; before it,
  // the parameter's host work. The values do not change; the traffic is
  // DeepSpeed's. RoundTrip does it for a bucket's host share off the
  // boundary; at the boundary Offload does it before each fp32 copy.
  static bool RoundTripApplies(const ZeroOptions& options);
  absl::Status RoundTrip(int bucket, const runtime::TensorRef& mine);
  absl::Status RoundTripParam(int param, const runtime::TensorRef& grad);
  // The elements of the largest parameter partition (RoundTrip's device
  // buffer).
  static int64_t MaxPartition(const ShardLayout& layout);
  absl::Status WaitSlot(Slot& slot);
  // The bytes of the device buffers this reducer holds.
  int64_t DeviceBytesAllocated() const;

  ZeroContext ctx_;
  std::vector<ParamRange> buckets_;        // in readiness order
  std::vector<int> bucket_of_;             // per parameter
  std::vector<int64_t> offset_in_bucket_;  // per parameter, within a row
  int next_param_ = 0;  // the next parameter expected ready (descending)
  // GradsReady's parameters (descending) until IssueReady, and their slot.
  std::vector<int> ready_params_;
  int ready_slot_ = 0;
  int next_bucket_ = 0;

  Slot slots_[2];
  int64_t slot_elements_ = 0;
  std::vector<int64_t> slot_offset_;  // per parameter (non-shared)
  std::vector<int> shared_;           // per parameter: index into dedicated_
  std::vector<Slot> dedicated_;
  int current_slot_ = 0;
  int modules_seen_ = 0;
  bool slot_waited_ = false;

  runtime::OwnedBuffer bucket_;
  runtime::OwnedBuffer reduced_;  // this rank's chunk of a bucket
  bool direct_to_host_ = false;   // see Init
  runtime::DType host_dtype_ = runtime::DType::kF32;
  runtime::OwnedBuffer partition_;
  runtime::OwnedBuffer host_partition_;
  runtime::OwnedBuffer other_host_partition_;  // see SwapHostPartition
  runtime::OwnedBuffer norm_device_;
  runtime::OwnedBuffer norm_gathered_;
  runtime::OwnedBuffer norm_host_;
  runtime::OwnedBuffer norm_running_host_;  // see running_norm_squared
  runtime::OwnedBuffer round_trip_host_;    // see RoundTrip
  runtime::OwnedBuffer round_trip_device_;  // see RoundTrip
  std::unique_ptr<runtime::Event> ready_;
  std::vector<std::unique_ptr<runtime::Event>> offloaded_;  // per bucket
  std::vector<std::unique_ptr<runtime::Event>> partition_final_;

  int micro_ = 0;
  bool boundary_ = false;
  bool speculative_ = false;  // see BeginBackward
  bool in_backward_ = false;
};

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_GRAD_REDUCER_H_
