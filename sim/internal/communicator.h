// Copyright 2026 The zero3 Authors.
//
// communicator.h: a simulated rank's communicator for one group. It checks a
// collective's arguments, charges the host for the call, enqueues it on the
// stream and hands it to the rendezvous (collectives.h), which returns once
// every simulated member has issued it. Used by the rank's thread only.

#ifndef ZERO3_SIM_INTERNAL_COMMUNICATOR_H_
#define ZERO3_SIM_INTERNAL_COMMUNICATOR_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/runtime/runtime.h"
#include "sim/cost_model.h"
#include "sim/internal/collectives.h"
#include "sim/internal/rank_state.h"

namespace zero3 {
namespace sim {
namespace internal {

class SimCommunicator final : public runtime::Communicator {
 public:
  // `rank`'s communicator in `group` (from CollectiveRendezvous::GroupOf),
  // where it is member `position` of `size`.
  SimCommunicator(RankState* rank, CollectiveRendezvous* collectives, int group,
                  int position, int size)
      : rank_(rank),
        collectives_(collectives),
        group_(group),
        position_(position),
        size_(size) {}

  // runtime::Communicator
  int rank() const override { return position_; }
  int size() const override { return size_; }
  absl::Status AllGather(runtime::Stream& stream,
                         const runtime::TensorRef& send,
                         const runtime::TensorRef& recv,
                         absl::string_view label) override;
  absl::Status AllGatherGroup(runtime::Stream& stream,
                              absl::Span<const runtime::AllGatherPart> parts,
                              absl::string_view label) override;
  absl::Status ReduceScatter(runtime::Stream& stream,
                             const runtime::TensorRef& send,
                             const runtime::TensorRef& recv,
                             absl::string_view label) override;
  absl::Status AllReduce(runtime::Stream& stream,
                         const runtime::TensorRef& send,
                         const runtime::TensorRef& recv, runtime::ReduceOp op,
                         absl::string_view label) override;
  absl::Status Broadcast(runtime::Stream& stream,
                         const runtime::TensorRef& buffer, int root,
                         absl::string_view label) override;

 private:
  absl::Status Issue(runtime::Stream& stream, CollectiveKind kind,
                     const runtime::TensorRef& send,
                     const runtime::TensorRef& recv, runtime::ReduceOp op,
                     int root, absl::string_view label);
  absl::Status Issue(runtime::Stream& stream, CollectiveKind kind,
                     std::vector<runtime::AllGatherPart> parts,
                     runtime::ReduceOp op, int root, absl::string_view label);

  RankState* rank_;
  CollectiveRendezvous* collectives_;
  int group_;
  int position_;
  int size_;
};

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_COMMUNICATOR_H_
