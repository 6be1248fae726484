// Copyright 2026 The zero3 Authors.
//
// nccl_communicator.h: runtime::Communicator over NCCL.
//
// One NCCL communicator over all ranks of the job, one rank per process (or
// per thread, for in-process tests), one GPU per rank. Collectives are
// enqueued on the caller's CudaStream, in the layouts communicator.h
// specifies, which are NCCL's own: AllGather (ncclAllGather; AllGatherGroup
// between ncclGroupStart and ncclGroupEnd), ReduceScatter
// with sum (ncclReduceScatter), AllReduce with sum or max (ncclAllReduce,
// in place when send and recv are the same slice), Broadcast
// (ncclBroadcast, in place). Element types: f32, bf16, f16.
//
// Every rank must issue the same collectives in the same order; NCCL does
// not check it, and a mismatch hangs or corrupts. The simulator does check
// it: run a new program there first.
//
// Failure of another rank: a collective whose peers never arrive does not
// return. The runtime's watchdog (runtime::Watchdog, named here the
// collectives as they are issued) bounds the host's wait for them, polls
// AsyncError, and aborts the communicator; Abort() also lets a rank that
// failed exit without waiting for its peers.
//
// Ownership: owns the ncclComm_t. Thread-compatible: driven by the rank's
// host thread.

#ifndef ZERO3_BACKENDS_CUDA_NCCL_COMMUNICATOR_H_
#define ZERO3_BACKENDS_CUDA_NCCL_COMMUNICATOR_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/cuda/cuda_dynload.h"
#include "core/runtime/communicator.h"
#include "core/runtime/watchdog.h"

namespace zero3 {
namespace cuda {

class CudaDevice;

class NcclCommunicator final : public runtime::Communicator {
 public:
  // Joins the communicator named by `id` (NCCL_UNIQUE_ID_BYTES bytes) as
  // `rank` of `size`, on `device`, which must be current on this thread.
  // Blocks until every rank has joined.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> Create(
      CudaDevice* device, absl::string_view id, int rank, int size);

  // Destroy() if neither Destroy nor Abort was called.
  ~NcclCommunicator() override;

  // A fresh unique id, as bytes (ncclGetUniqueId). Rank 0 makes it and hands
  // it to the others (rendezvous.h).
  static absl::StatusOr<std::string> NewUniqueId();

  int rank() const override { return rank_; }
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

  // Waits for outstanding collectives (ncclCommFinalize), then frees the
  // communicator (ncclCommDestroy). Every rank must call it.
  absl::Status Destroy();
  // Frees the communicator without waiting for peers (ncclCommAbort).
  void Abort();

  // Runs one collective of each kind the engine issues, small and large
  // (a few tens of MiB of device memory, freed after), and waits for them:
  // NCCL allocates its channel buffers at a connection's first use, so
  // afterwards the device's free memory holds them. Every rank must call
  // it.
  absl::Status WarmUp();

  // Tells `watchdog` (may be null) of every collective issued, for its
  // message. Not owned; must outlive the communicator's use.
  void set_watchdog(runtime::Watchdog* watchdog) { watchdog_ = watchdog; }

  // NCCL's asynchronous error for this communicator (a peer or a network
  // failure), OK when none.
  absl::Status AsyncError();

  ncclComm_t raw() const { return comm_; }

 private:
  NcclCommunicator(CudaDevice* device, ncclComm_t comm, int rank, int size)
      : device_(device), comm_(comm), rank_(rank), size_(size) {}

  // The cudaStream_t of `stream`, which must be a CudaStream of device_.
  absl::StatusOr<cudaStream_t> StreamOf(runtime::Stream& stream,
                                        absl::string_view what,
                                        absl::string_view label);

  CudaDevice* device_;
  ncclComm_t comm_;
  int rank_;
  int size_;
  runtime::Watchdog* watchdog_ = nullptr;
};

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_NCCL_COMMUNICATOR_H_
