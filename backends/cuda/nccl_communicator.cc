// Copyright 2026 The zero3 Authors.

#include "backends/cuda/nccl_communicator.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_status.h"
#include "core/runtime/argument_checks.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cuda {

using runtime::TensorRef;

namespace {

absl::StatusOr<ncclDataType_t> NcclType(kernels::DType dtype) {
  switch (dtype) {
    case kernels::DType::kF32:
      return ncclFloat32;
    case kernels::DType::kBF16:
      return ncclBfloat16;
    case kernels::DType::kF16:
      return ncclFloat16;
  }
  return absl::InvalidArgumentError("no NCCL type for this dtype");
}

absl::Status CheckDevice(const TensorRef& t, absl::string_view what,
                         absl::string_view label) {
  if (runtime::IsHost(t.slice.space())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", label, "' needs device buffers"));
  }
  if (t.slice.data() == nullptr && t.slice.bytes() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", label, "': buffer without memory"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> NcclCommunicator::NewUniqueId() {
  ncclUniqueId id;
  ZR_NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id), nullptr);
  return std::string(id.internal, sizeof(id.internal));
}

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(
    CudaDevice* device, absl::string_view id, int rank, int size) {
  ncclUniqueId unique;
  if (id.size() != sizeof(unique.internal)) {
    return absl::InvalidArgumentError(
        absl::StrCat("NCCL unique id of ", id.size(), " bytes, expected ",
                     sizeof(unique.internal)));
  }
  std::memcpy(unique.internal, id.data(), sizeof(unique.internal));
  ncclComm_t comm = nullptr;
  const ncclResult_t result = ncclCommInitRank(&comm, size, unique, rank);
  if (result != ncclSuccess) {
    return Annotate(NcclStatus(result, "ncclCommInitRank", comm),
                    absl::StrCat("rank ", rank, " of ", size, " on GPU ",
                                 device->ordinal()));
  }
  return std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(device, comm, rank, size));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ != nullptr) (void)Destroy();
}

absl::Status NcclCommunicator::Destroy() {
  if (comm_ == nullptr) return absl::OkStatus();
  ncclComm_t comm = comm_;
  comm_ = nullptr;
  absl::Status result =
      NcclStatus(ncclCommFinalize(comm), "ncclCommFinalize", comm);
  if (!result.ok()) {
    ncclCommAbort(comm);
    return result;
  }
  return NcclStatus(ncclCommDestroy(comm), "ncclCommDestroy");
}

void NcclCommunicator::Abort() {
  if (comm_ == nullptr) return;
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

absl::Status NcclCommunicator::WarmUp() {
  if (size_ == 1 || comm_ == nullptr) return absl::OkStatus();
  // Per rank: LL for the small all-reduce and broadcast, Simple for the
  // large ones (NCCL picks the protocol by size).
  const size_t small = 1024, large = size_t{8} << 20;  // elements
  void* buffer = nullptr;
  cudaStream_t s = nullptr;
  ZR_CUDA_RETURN_IF_ERROR(
      cudaMalloc(&buffer, large * 4 * static_cast<size_t>(size_ + 1)));
  absl::Status status = CudaStatus(
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  auto* f = static_cast<float*>(buffer);
  auto run = [&](ncclResult_t r, const char* what) {
    if (status.ok()) status = NcclStatus(r, what, comm_);
  };
  if (status.ok()) {
    run(ncclAllReduce(f, f, small, ncclFloat32, ncclSum, comm_, s),
        "ncclAllReduce (warm-up)");
    run(ncclAllReduce(f, f, large, ncclFloat32, ncclSum, comm_, s),
        "ncclAllReduce (warm-up)");
    run(ncclAllReduce(f, f, small, ncclFloat32, ncclMax, comm_, s),
        "ncclAllReduce (warm-up)");
    run(ncclAllGather(f, f + large, large, ncclBfloat16, comm_, s),
        "ncclAllGather (warm-up)");
    run(ncclReduceScatter(f + large, f, large, ncclBfloat16, ncclSum, comm_, s),
        "ncclReduceScatter (warm-up)");
    run(ncclBroadcast(f, f, small, ncclFloat32, 0, comm_, s),
        "ncclBroadcast (warm-up)");
    if (status.ok()) {
      status = CudaStatus(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    }
  }
  if (s != nullptr) cudaStreamDestroy(s);
  cudaFree(buffer);
  return Annotate(status, "warming up NCCL");
}

absl::Status NcclCommunicator::AsyncError() {
  if (comm_ == nullptr) return absl::OkStatus();
  ncclResult_t async = ncclSuccess;
  ZR_NCCL_RETURN_IF_ERROR(ncclCommGetAsyncError(comm_, &async), comm_);
  return NcclStatus(async, "NCCL (asynchronous error)", comm_);
}

absl::StatusOr<cudaStream_t> NcclCommunicator::StreamOf(
    runtime::Stream& stream, absl::string_view what, absl::string_view label) {
  if (watchdog_ != nullptr) {
    watchdog_->Note(absl::StrCat(what, " '", label, "'"));
  }
  auto* s = dynamic_cast<CudaStream*>(&stream);
  if (s == nullptr || &s->device() != device_) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", label, "': stream belongs to another device"));
  }
  if (comm_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " '", label, "': the communicator was destroyed"));
  }
  device_->NoteWork();
  return s->raw();
}

absl::Status NcclCommunicator::AllGather(runtime::Stream& stream,
                                         const TensorRef& send,
                                         const TensorRef& recv,
                                         absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckAllGather(send, recv, size_, label));
  ZR_RETURN_IF_ERROR(CheckDevice(send, "all-gather", label));
  ZR_RETURN_IF_ERROR(CheckDevice(recv, "all-gather", label));
  ZR_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(send.dtype));
  ZR_ASSIGN_OR_RETURN(cudaStream_t s, StreamOf(stream, "all-gather", label));
  const TimedOp timed(*device_, s, stream.name(), label);
  const ncclResult_t result =
      ncclAllGather(send.slice.data(), recv.slice.data(),
                    static_cast<size_t>(send.elements()), type, comm_, s);
  return Annotate(NcclStatus(result, "ncclAllGather", comm_),
                  absl::StrCat("all-gather '", label, "'"));
}

absl::Status NcclCommunicator::AllGatherGroup(
    runtime::Stream& stream, absl::Span<const runtime::AllGatherPart> parts,
    absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckAllGatherGroup(parts, size_, label));
  std::vector<ncclDataType_t> types;
  for (const runtime::AllGatherPart& part : parts) {
    ZR_RETURN_IF_ERROR(CheckDevice(part.send, "all-gather", label));
    ZR_RETURN_IF_ERROR(CheckDevice(part.recv, "all-gather", label));
    ZR_ASSIGN_OR_RETURN(types.emplace_back(), NcclType(part.send.dtype));
  }
  ZR_ASSIGN_OR_RETURN(cudaStream_t s, StreamOf(stream, "all-gather", label));
  const TimedOp timed(*device_, s, stream.name(), label);
  ZR_NCCL_RETURN_IF_ERROR(ncclGroupStart(), comm_);
  ncclResult_t result = ncclSuccess;
  for (size_t i = 0; i < parts.size() && result == ncclSuccess; ++i) {
    const runtime::AllGatherPart& part = parts[i];
    result = ncclAllGather(part.send.slice.data(), part.recv.slice.data(),
                           static_cast<size_t>(part.send.elements()), types[i],
                           comm_, s);
  }
  // The group is closed whatever happened inside it.
  const ncclResult_t end = ncclGroupEnd();
  if (result == ncclSuccess) result = end;
  return Annotate(NcclStatus(result, "ncclAllGather (grouped)", comm_),
                  absl::StrCat("all-gather group '", label, "' of ",
                               parts.size(), " parts"));
}

absl::Status NcclCommunicator::ReduceScatter(runtime::Stream& stream,
                                             const TensorRef& send,
                                             const TensorRef& recv,
                                             absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckReduceScatter(send, recv, size_, label));
  ZR_RETURN_IF_ERROR(CheckDevice(send, "reduce-scatter", label));
  ZR_RETURN_IF_ERROR(CheckDevice(recv, "reduce-scatter", label));
  ZR_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(send.dtype));
  ZR_ASSIGN_OR_RETURN(cudaStream_t s,
                      StreamOf(stream, "reduce-scatter", label));
  const TimedOp timed(*device_, s, stream.name(), label);
  const ncclResult_t result = ncclReduceScatter(
      send.slice.data(), recv.slice.data(),
      static_cast<size_t>(recv.elements()), type, ncclSum, comm_, s);
  return Annotate(NcclStatus(result, "ncclReduceScatter", comm_),
                  absl::StrCat("reduce-scatter '", label, "'"));
}

absl::Status NcclCommunicator::AllReduce(runtime::Stream& stream,
                                         const TensorRef& send,
                                         const TensorRef& recv,
                                         runtime::ReduceOp op,
                                         absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckAllReduce(send, recv, label));
  ZR_RETURN_IF_ERROR(CheckDevice(send, "all-reduce", label));
  ZR_RETURN_IF_ERROR(CheckDevice(recv, "all-reduce", label));
  ZR_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(send.dtype));
  ZR_ASSIGN_OR_RETURN(cudaStream_t s, StreamOf(stream, "all-reduce", label));
  const TimedOp timed(*device_, s, stream.name(), label);
  const ncclResult_t result = ncclAllReduce(
      send.slice.data(), recv.slice.data(),
      static_cast<size_t>(send.elements()), type,
      op == runtime::ReduceOp::kSum ? ncclSum : ncclMax, comm_, s);
  return Annotate(NcclStatus(result, "ncclAllReduce", comm_),
                  absl::StrCat("all-reduce '", label, "'"));
}

absl::Status NcclCommunicator::Broadcast(runtime::Stream& stream,
                                         const TensorRef& buffer, int root,
                                         absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckBroadcast(root, size_, label));
  ZR_RETURN_IF_ERROR(CheckDevice(buffer, "broadcast", label));
  ZR_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(buffer.dtype));
  ZR_ASSIGN_OR_RETURN(cudaStream_t s, StreamOf(stream, "broadcast", label));
  const TimedOp timed(*device_, s, stream.name(), label);
  const ncclResult_t result = ncclBroadcast(
      buffer.slice.data(), buffer.slice.data(),
      static_cast<size_t>(buffer.elements()), type, root, comm_, s);
  return Annotate(NcclStatus(result, "ncclBroadcast", comm_),
                  absl::StrCat("broadcast '", label, "'"));
}

}  // namespace cuda
}  // namespace zero3
