// Copyright 2026 The zero3 Authors.

#include "core/zero/host_state.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/kernels/dtype.h"
#include "core/runtime/host_task.h"
#include "core/util/parallel_for.h"
#include "core/util/status_macros.h"
#include "core/zero/host_adam.h"

namespace zero3 {
namespace zero {

absl::StatusOr<HostState> HostState::Allocate(
    runtime::Runtime& rt, int64_t elements, runtime::HostMemoryKind master_kind,
    bool second, runtime::DType master_dtype, runtime::DType moments_dtype) {
  using runtime::AllocateHost;
  const runtime::HostMemoryKind pageable = runtime::HostMemoryKind::kPageable;
  HostState s;
  s.dtypes_[0] = master_dtype;
  s.dtypes_[1] = moments_dtype;
  const int64_t master_bytes = elements * kernels::DTypeSize(master_dtype);
  const int64_t moment_bytes = elements * kernels::DTypeSize(moments_dtype);
  const std::string master = absl::StrCat(
      master_dtype == runtime::DType::kF32 ? "fp32" : "bf16", " master (host)");
  for (int set = 0; set < (second ? 2 : 1); ++set) {
    // The sets swap, so each is the master in turn.
    ZR_ASSIGN_OR_RETURN(
        s.sets_[set][0],
        AllocateHost(rt, master_bytes, set == 0 ? master_kind : pageable,
                     master));
    ZR_ASSIGN_OR_RETURN(
        s.sets_[set][1],
        AllocateHost(rt, moment_bytes, pageable, "adam exp_avg (host)"));
    ZR_ASSIGN_OR_RETURN(
        s.sets_[set][2],
        AllocateHost(rt, moment_bytes, pageable, "adam exp_avg_sq (host)"));
  }
  return s;
}

void HostState::Write(int t, const float* values, int threads) const {
  const runtime::OwnedBuffer& b = sets_[0][t];
  const int64_t n = b.bytes() / kernels::DTypeSize(dtype(t));
  if (dtype(t) == runtime::DType::kF32) {
    ParallelCopy(b.data(), values, n * 4, threads);
  } else {
    HostCastFromFloat(values, dtype(t), b.data(), n, threads);
  }
}

int64_t HostState::bytes_per_element() const {
  return kernels::DTypeSize(dtypes_[0]) + 2 * kernels::DTypeSize(dtypes_[1]);
}

HostState::Set HostState::Of(bool second, int64_t at, int64_t n) const {
  const runtime::OwnedBuffer* b = sets_[second ? 1 : 0];
  const int64_t ms = kernels::DTypeSize(dtypes_[0]);
  const int64_t vs = kernels::DTypeSize(dtypes_[1]);
  return {b[0].Slice(at * ms, n * ms), b[1].Slice(at * vs, n * vs),
          b[2].Slice(at * vs, n * vs)};
}

absl::Status HostState::Settle(runtime::Runtime& rt,
                               const std::vector<HostPiece>& pieces,
                               int64_t host_begin, int task_threads,
                               int copy_threads) {
  runtime::HostTask copy;
  copy.label = "settle master and moments";
  for (size_t i = 0; i < in_second_.size(); ++i) {
    if (!in_second_[i]) continue;
    const HostPiece& piece = pieces[i];
    const int64_t at = piece.offset - host_begin;
    const Set from = Of(true, at, piece.elements);
    const Set to = Of(false, at, piece.elements);
    copy.reads.insert(copy.reads.end(),
                      {from.master, from.exp_avg, from.exp_avg_sq});
    copy.writes.insert(copy.writes.end(),
                       {to.master, to.exp_avg, to.exp_avg_sq});
    copy.memory_bytes += 2 * piece.elements * bytes_per_element();
  }
  if (copy.reads.empty()) return absl::OkStatus();
  copy.threads = task_threads;
  copy.run = [&]() -> absl::Status {
    for (size_t k = 0; k < copy.reads.size(); ++k) {
      ParallelCopy(copy.writes[k].data(), copy.reads[k].data(),
                   copy.reads[k].bytes(), copy_threads);
    }
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt.RunHostTask(copy));
  in_second_.assign(in_second_.size(), false);
  return absl::OkStatus();
}

}  // namespace zero
}  // namespace zero3
