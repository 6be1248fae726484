// Copyright 2026 The zero3 Authors.

#include "sim/internal/communicator.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/runtime/argument_checks.h"
#include "core/util/status_macros.h"
#include "sim/internal/streams.h"

namespace zero3 {
namespace sim {
namespace internal {

using runtime::TensorRef;

absl::Status SimCommunicator::AllGather(runtime::Stream& stream,
                                        const TensorRef& send,
                                        const TensorRef& recv,
                                        absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckAllGather(send, recv, size_, label));
  return Issue(stream, CollectiveKind::kAllGather, send, recv,
               runtime::ReduceOp::kSum, 0, label);
}

absl::Status SimCommunicator::AllGatherGroup(
    runtime::Stream& stream, absl::Span<const runtime::AllGatherPart> parts,
    absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckAllGatherGroup(parts, size_, label));
  return Issue(stream, CollectiveKind::kAllGather,
               std::vector<runtime::AllGatherPart>(parts.begin(), parts.end()),
               runtime::ReduceOp::kSum, 0, label);
}

absl::Status SimCommunicator::ReduceScatter(runtime::Stream& stream,
                                            const TensorRef& send,
                                            const TensorRef& recv,
                                            absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckReduceScatter(send, recv, size_, label));
  return Issue(stream, CollectiveKind::kReduceScatter, send, recv,
               runtime::ReduceOp::kSum, 0, label);
}

absl::Status SimCommunicator::AllReduce(runtime::Stream& stream,
                                        const TensorRef& send,
                                        const TensorRef& recv,
                                        runtime::ReduceOp op,
                                        absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckAllReduce(send, recv, label));
  return Issue(stream, CollectiveKind::kAllReduce, send, recv, op, 0, label);
}

absl::Status SimCommunicator::Broadcast(runtime::Stream& stream,
                                        const TensorRef& buffer, int root,
                                        absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckBroadcast(root, size_, label));
  return Issue(stream, CollectiveKind::kBroadcast, buffer, buffer,
               runtime::ReduceOp::kSum, root, label);
}

absl::Status SimCommunicator::Issue(runtime::Stream& stream,
                                    CollectiveKind kind, const TensorRef& send,
                                    const TensorRef& recv, runtime::ReduceOp op,
                                    int root, absl::string_view label) {
  return Issue(stream, kind, {runtime::AllGatherPart{send, recv}}, op, root,
               label);
}

absl::Status SimCommunicator::Issue(runtime::Stream& stream,
                                    CollectiveKind kind,
                                    std::vector<runtime::AllGatherPart> parts,
                                    runtime::ReduceOp op, int root,
                                    absl::string_view label) {
  auto* s = dynamic_cast<SimStream*>(&stream);
  if (s == nullptr || s->rank() != rank_) {
    return absl::InvalidArgumentError("stream belongs to another device");
  }
  for (const runtime::AllGatherPart& part : parts) {
    if (runtime::IsHost(part.send.slice.space()) ||
        runtime::IsHost(part.recv.slice.space())) {
      return absl::InvalidArgumentError(absl::StrCat(
          CollectiveKindName(kind), " '", label, "' needs device buffers"));
    }
  }
  s->AwaitQueueSlot(rank_->cost().queue_kernel_milli());
  rank_->HostCost(rank_->cost().collective_call_nanos());
  rank_->CountOp();
  Arrival a;
  a.stream = s;
  a.position = position_;
  a.kind = kind;
  a.parts = std::move(parts);
  a.op = op;
  a.root = root;
  a.label = std::string(label);
  a.ready_ns = s->ready_ns();
  a.queue_seq = s->Enqueued(SimStream::kUnresolved);
  return collectives_->Arrive(group_, std::move(a));
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
