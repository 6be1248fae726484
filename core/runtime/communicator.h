// Copyright 2026 The zero3 Authors.
//
// communicator.h: collectives over a group of ranks, enqueued on a stream.
//
// Every rank of the group must issue the same collectives in the same order
// with matching sizes; each call enqueues the collective on the given stream
// of the calling rank and returns without waiting (like NCCL). The collective
// starts once every rank's stream has reached it, and occupies the stream
// until done. Cost: a ring, latency plus bytes·(n−1)/n over the bus bandwidth
// for all-gather and reduce-scatter, twice that for all-reduce.
//
// Buffer layout follows NCCL: AllGather's recv holds size() consecutive
// copies of send, rank-major; ReduceScatter's send holds size() consecutive
// chunks and rank r receives the sum of chunk r. Send and recv have the same
// dtype. Not thread-safe: one host thread per rank drives its communicator.

#ifndef ZERO3_CORE_RUNTIME_COMMUNICATOR_H_
#define ZERO3_CORE_RUNTIME_COMMUNICATOR_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/runtime/buffer.h"
#include "core/runtime/stream.h"

namespace zero3 {
namespace runtime {

enum class ReduceOp { kSum, kMax };

// One all-gather of AllGatherGroup.
struct AllGatherPart {
  TensorRef send;
  TensorRef recv;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // recv.elements() == size() * send.elements().
  virtual absl::Status AllGather(Stream& stream, const TensorRef& send,
                                 const TensorRef& recv,
                                 absl::string_view label) = 0;

  // The parts' all-gathers as one collective, as NCCL runs the calls between
  // ncclGroupStart and ncclGroupEnd: one launch, one latency, the parts'
  // bytes together. At least one part; each follows AllGather's rules.
  virtual absl::Status AllGatherGroup(Stream& stream,
                                      absl::Span<const AllGatherPart> parts,
                                      absl::string_view label) = 0;

  // send.elements() == size() * recv.elements(); the sum over ranks.
  virtual absl::Status ReduceScatter(Stream& stream, const TensorRef& send,
                                     const TensorRef& recv,
                                     absl::string_view label) = 0;

  // send and recv have equal sizes and may be the same slice.
  virtual absl::Status AllReduce(Stream& stream, const TensorRef& send,
                                 const TensorRef& recv, ReduceOp op,
                                 absl::string_view label) = 0;

  // Copies root's buffer into every other rank's buffer.
  virtual absl::Status Broadcast(Stream& stream, const TensorRef& buffer,
                                 int root, absl::string_view label) = 0;
};

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_COMMUNICATOR_H_
