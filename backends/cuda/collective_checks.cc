// Copyright 2026 The zero3 Authors.

#include "backends/cuda/collective_checks.h"

#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cuda {
namespace {

using runtime::Buffer;
using runtime::HostMemoryKind;
using runtime::Stream;
using runtime::TensorRef;

std::vector<uint8_t> Encode(const std::vector<float>& values,
                            kernels::DType dtype) {
  const int64_t size = kernels::DTypeSize(dtype);
  std::vector<uint8_t> bytes(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i) {
    kernels::StoreFromFloat(dtype, values[i], bytes.data(), i);
  }
  return bytes;
}

std::vector<float> Decode(const void* data, int64_t n, kernels::DType dtype) {
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) {
    values[i] = kernels::LoadAsFloat(dtype, data, i);
  }
  return values;
}

}  // namespace

absl::Status CheckCollectivesExactly(runtime::Runtime& rt,
                                     kernels::DType dtype) {
  const int n = rt.world_size();
  const int r = rt.rank();
  const int64_t count = 1000;  // elements per rank
  const int64_t esize = kernels::DTypeSize(dtype);
  runtime::Device& device = rt.device();
  runtime::Communicator& comm = rt.world();
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> s, device.CreateStream("comm"));
  ZR_ASSIGN_OR_RETURN(
      Buffer host,
      rt.AllocateHost(count * n * esize, HostMemoryKind::kPinned, "host"));
  ZR_ASSIGN_OR_RETURN(Buffer a, device.Allocate(count * n * esize, "a"));
  ZR_ASSIGN_OR_RETURN(Buffer b, device.Allocate(count * n * esize, "b"));
  auto upload = [&](const std::vector<float>& values) -> absl::Status {
    const std::vector<uint8_t> bytes = Encode(values, dtype);
    std::memcpy(host.data(), bytes.data(), bytes.size());
    ZR_RETURN_IF_ERROR(
        s->Copy(a.Slice(0, bytes.size()), host.Slice(0, bytes.size()), "up"));
    return s->Synchronize();
  };
  auto download = [&](const Buffer& from,
                      int64_t elements) -> absl::StatusOr<std::vector<float>> {
    ZR_RETURN_IF_ERROR(s->Copy(host.Slice(0, elements * esize),
                               from.Slice(0, elements * esize), "down"));
    ZR_RETURN_IF_ERROR(s->Synchronize());
    return Decode(host.data(), elements, dtype);
  };
  auto tensor = [&](const Buffer& buffer, int64_t elements) {
    return TensorRef::Of(buffer, dtype, 0, elements);
  };

  // All-gather: rank r contributes r * 10 + i % 7.
  std::vector<float> mine(count);
  for (int64_t i = 0; i < count; ++i) mine[i] = r * 10 + i % 7;
  ZR_RETURN_IF_ERROR(upload(mine));
  ZR_RETURN_IF_ERROR(
      comm.AllGather(*s, tensor(a, count), tensor(b, count * n), "all-gather"));
  ZR_ASSIGN_OR_RETURN(std::vector<float> gathered, download(b, count * n));
  for (int q = 0; q < n; ++q) {
    for (int64_t i = 0; i < count; ++i) {
      if (gathered[q * count + i] != q * 10 + i % 7) {
        return absl::InternalError(absl::StrCat("all-gather: element ", i,
                                                " of rank ", q, " is ",
                                                gathered[q * count + i]));
      }
    }
  }

  // Reduce-scatter (sum): every rank sends i % 5 + r; chunk r comes back.
  std::vector<float> send(count * n);
  for (int64_t i = 0; i < count * n; ++i) send[i] = i % 5 + r;
  ZR_RETURN_IF_ERROR(upload(send));
  ZR_RETURN_IF_ERROR(comm.ReduceScatter(*s, tensor(a, count * n),
                                        tensor(b, count), "reduce-scatter"));
  ZR_ASSIGN_OR_RETURN(std::vector<float> reduced, download(b, count));
  const int rank_sum = n * (n - 1) / 2;
  for (int64_t i = 0; i < count; ++i) {
    const float want = n * ((r * count + i) % 5) + rank_sum;
    if (reduced[i] != want) {
      return absl::InternalError(absl::StrCat(
          "reduce-scatter: element ", i, " is ", reduced[i], ", want ", want));
    }
  }

  // All-reduce in place, sum then max.
  for (runtime::ReduceOp op :
       {runtime::ReduceOp::kSum, runtime::ReduceOp::kMax}) {
    ZR_RETURN_IF_ERROR(upload(mine));
    ZR_RETURN_IF_ERROR(comm.AllReduce(*s, tensor(a, count), tensor(a, count),
                                      op, "all-reduce"));
    ZR_ASSIGN_OR_RETURN(std::vector<float> got, download(a, count));
    for (int64_t i = 0; i < count; ++i) {
      const float want = op == runtime::ReduceOp::kSum
                             ? 10 * rank_sum + n * (i % 7)
                             : 10 * (n - 1) + i % 7;
      if (got[i] != want) {
        return absl::InternalError(absl::StrCat(
            "all-reduce: element ", i, " is ", got[i], ", want ", want));
      }
    }
  }

  // Broadcast from the last rank.
  ZR_RETURN_IF_ERROR(upload(mine));
  ZR_RETURN_IF_ERROR(comm.Broadcast(*s, tensor(a, count), n - 1, "broadcast"));
  ZR_ASSIGN_OR_RETURN(std::vector<float> got, download(a, count));
  for (int64_t i = 0; i < count; ++i) {
    if (got[i] != (n - 1) * 10 + i % 7) {
      return absl::InternalError(
          absl::StrCat("broadcast: element ", i, " is ", got[i]));
    }
  }

  // Wrong shapes and host buffers are refused before NCCL sees them.
  if (!absl::IsInvalidArgument(comm.AllGather(
          *s, tensor(a, count), tensor(b, count * n - 1), "bad"))) {
    return absl::InternalError("all-gather with a short recv was accepted");
  }
  if (!absl::IsInvalidArgument(
          comm.AllReduce(*s, TensorRef::Of(host, dtype, 0, count),
                         TensorRef::Of(host, dtype, 0, count),
                         runtime::ReduceOp::kSum, "host"))) {
    return absl::InternalError("all-reduce of host memory was accepted");
  }
  ZR_RETURN_IF_ERROR(rt.FreeHost(host));
  ZR_RETURN_IF_ERROR(device.Free(a));
  return device.Free(b);
}

}  // namespace cuda
}  // namespace zero3
