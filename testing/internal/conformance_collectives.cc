// Copyright 2026 The zero3 Authors.
//
// Conformance cases for collectives (see testing/backend_conformance.h).
//
// Every value is a small integer (|v| <= 100, sums over 3 ranks included),
// which fp32 and bf16 hold exactly, so every result is exact whatever order
// a backend reduces in. Send and receive tensors sit at offsets inside
// larger buffers whose other elements hold a guard value, so a collective
// that writes outside its receive tensor, or reads outside its send tensor,
// is caught.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/runtime/runtime.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "testing/internal/conformance.h"

namespace zero3 {
namespace testing {
namespace conformance_internal {
namespace {

using runtime::Communicator;
using runtime::ReduceOp;
using runtime::Runtime;
using runtime::Stream;
using runtime::TensorRef;

constexpr float kGuard = 77.0f;
// A short odd count, and one long enough for backends to split a collective
// into several chunks.
constexpr int64_t kCounts[] = {37, 65537};

// Values of rank `rank` at element `i`, in [-30, 30] and [-20, 20].
float GatherValue(int rank, int64_t i) {
  return static_cast<float>((rank * 7 + i * 3) % 61 - 30);
}
float ReduceValue(int rank, int64_t i) {
  return static_cast<float>((rank * 5 + i * 11) % 41 - 20);
}

// `values` at element `offset` of a buffer of `total` elements of guards.
std::vector<float> Guarded(const std::vector<float>& values, int64_t offset,
                           int64_t total) {
  std::vector<float> buffer(total, kGuard);
  std::copy(values.begin(), values.end(), buffer.begin() + offset);
  return buffer;
}

// A device tensor of `values` at element 1 of a guarded buffer of
// values.size() + 3 elements; `*whole` is the whole buffer.
absl::StatusOr<TensorRef> GuardedInput(DeviceArena& arena,
                                       const std::vector<float>& values,
                                       DType dtype, absl::string_view label,
                                       TensorRef* whole) {
  const int64_t n = static_cast<int64_t>(values.size());
  ZR_ASSIGN_OR_RETURN(*whole,
                      arena.Input(Guarded(values, 1, n + 3), dtype, label));
  return whole->Elements(1, n);
}

// EXPECTs that `whole` holds `expected` at element 1 and guards elsewhere.
absl::Status ExpectGuarded(DeviceArena& arena, const TensorRef& whole,
                           const std::vector<float>& expected,
                           absl::string_view what) {
  ZR_ASSIGN_OR_RETURN(std::vector<float> actual, arena.Read(whole));
  ExpectEqualValues(what, actual, Guarded(expected, 1, whole.elements()));
  return absl::OkStatus();
}

std::string What(absl::string_view collective, const Runtime& rt, int64_t count,
                 DType dtype) {
  return absl::StrCat(collective, " of ", count, " ", kernels::DTypeName(dtype),
                      " on rank ", rt.rank());
}

// The streams a collective case uses: collectives run on `comm`; `compute`
// is a second stream, as the engine computes on one and communicates on
// another. Both outlive the case's arena.
struct Streams {
  Stream& comm;
  Stream& compute;
};

using CollectiveBody =
    std::function<absl::Status(Runtime&, Streams, DeviceArena&, DType)>;

absl::Status RunCollectiveCase(Runtime& rt, DType dtype,
                               const CollectiveBody& body) {
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> comm,
                      rt.device().CreateStream("collectives"));
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> compute,
                      rt.device().CreateStream("compute"));
  DeviceArena arena(rt, *comm);
  return body(rt, Streams{*comm, *compute}, arena, dtype);
}

// ---------------------------------------------------------------------------

absl::Status AllGatherCase(Runtime& rt, Streams streams, DeviceArena& arena,
                           DType dt) {
  Stream& stream = streams.comm;
  Communicator& comm = rt.world();
  const int n = comm.size();
  for (int64_t count : kCounts) {
    std::vector<float> mine(count), expected(n * count);
    for (int64_t i = 0; i < count; ++i) mine[i] = GatherValue(comm.rank(), i);
    for (int r = 0; r < n; ++r) {
      for (int64_t i = 0; i < count; ++i) {
        expected[r * count + i] = GatherValue(r, i);
      }
    }
    TensorRef send_buffer, recv_buffer;
    ZR_ASSIGN_OR_RETURN(TensorRef send,
                        GuardedInput(arena, mine, dt, "send", &send_buffer));
    ZR_ASSIGN_OR_RETURN(
        TensorRef recv,
        GuardedInput(arena, std::vector<float>(n * count, kGuard), dt, "recv",
                     &recv_buffer));
    ZR_RETURN_IF_ERROR(comm.AllGather(stream, send, recv, "all-gather"));
    ZR_RETURN_IF_ERROR(ExpectGuarded(arena, recv_buffer, expected,
                                     What("all-gather", rt, count, dt)));
    ZR_RETURN_IF_ERROR(ExpectGuarded(arena, send_buffer, mine,
                                     What("all-gather send", rt, count, dt)));
  }
  return absl::OkStatus();
}

// Parts of every size in kCounts at once, each with its own guarded
// buffers: one grouped collective gathers them all.
absl::Status AllGatherGroupCase(Runtime& rt, Streams streams,
                                DeviceArena& arena, DType dt) {
  Communicator& comm = rt.world();
  const int n = comm.size();
  std::vector<runtime::AllGatherPart> parts;
  std::vector<TensorRef> send_buffers, recv_buffers;
  std::vector<std::vector<float>> mine, expected;
  for (int64_t count : kCounts) {
    // Offset by the part's index, so that parts differ.
    const int64_t shift = static_cast<int64_t>(parts.size()) * 13;
    mine.emplace_back(count);
    expected.emplace_back(n * count);
    for (int64_t i = 0; i < count; ++i) {
      mine.back()[i] = GatherValue(comm.rank(), i + shift);
    }
    for (int r = 0; r < n; ++r) {
      for (int64_t i = 0; i < count; ++i) {
        expected.back()[r * count + i] = GatherValue(r, i + shift);
      }
    }
    send_buffers.emplace_back();
    recv_buffers.emplace_back();
    ZR_ASSIGN_OR_RETURN(
        TensorRef send,
        GuardedInput(arena, mine.back(), dt, "send", &send_buffers.back()));
    ZR_ASSIGN_OR_RETURN(
        TensorRef recv,
        GuardedInput(arena, std::vector<float>(n * count, kGuard), dt, "recv",
                     &recv_buffers.back()));
    parts.push_back({send, recv});
  }
  ZR_RETURN_IF_ERROR(
      comm.AllGatherGroup(streams.comm, parts, "all-gather group"));
  for (size_t k = 0; k < parts.size(); ++k) {
    const int64_t count = kCounts[k];
    ZR_RETURN_IF_ERROR(ExpectGuarded(arena, recv_buffers[k], expected[k],
                                     What("all-gather group", rt, count, dt)));
    ZR_RETURN_IF_ERROR(
        ExpectGuarded(arena, send_buffers[k], mine[k],
                      What("all-gather group send", rt, count, dt)));
  }
  return absl::OkStatus();
}

absl::Status ReduceScatterCase(Runtime& rt, Streams streams, DeviceArena& arena,
                               DType dt) {
  Stream& stream = streams.comm;
  Communicator& comm = rt.world();
  const int n = comm.size();
  for (int64_t count : kCounts) {
    // Chunk r of every rank's send sums into rank r's recv.
    std::vector<float> mine(n * count), expected(count, 0.0f);
    for (int64_t j = 0; j < n * count; ++j) {
      mine[j] = ReduceValue(comm.rank(), j);
    }
    for (int r = 0; r < n; ++r) {
      for (int64_t i = 0; i < count; ++i) {
        expected[i] += ReduceValue(r, comm.rank() * count + i);
      }
    }
    TensorRef send_buffer, recv_buffer;
    ZR_ASSIGN_OR_RETURN(TensorRef send,
                        GuardedInput(arena, mine, dt, "send", &send_buffer));
    ZR_ASSIGN_OR_RETURN(TensorRef recv,
                        GuardedInput(arena, std::vector<float>(count, kGuard),
                                     dt, "recv", &recv_buffer));
    ZR_RETURN_IF_ERROR(
        comm.ReduceScatter(stream, send, recv, "reduce-scatter"));
    ZR_RETURN_IF_ERROR(ExpectGuarded(arena, recv_buffer, expected,
                                     What("reduce-scatter", rt, count, dt)));
  }
  return absl::OkStatus();
}

absl::Status AllReduceCase(Runtime& rt, Streams streams, DeviceArena& arena,
                           DType dt, ReduceOp op) {
  Stream& stream = streams.comm;
  Communicator& comm = rt.world();
  const int n = comm.size();
  const char* name = op == ReduceOp::kSum ? "all-reduce sum" : "all-reduce max";
  for (int64_t count : kCounts) {
    std::vector<float> mine(count), expected(count);
    for (int64_t i = 0; i < count; ++i) {
      mine[i] = ReduceValue(comm.rank(), i);
      expected[i] = ReduceValue(0, i);
      for (int r = 1; r < n; ++r) {
        expected[i] = op == ReduceOp::kSum
                          ? expected[i] + ReduceValue(r, i)
                          : std::max(expected[i], ReduceValue(r, i));
      }
    }
    // Out of place, then in place (send and recv the same slice).
    TensorRef send_buffer, recv_buffer;
    ZR_ASSIGN_OR_RETURN(TensorRef send,
                        GuardedInput(arena, mine, dt, "send", &send_buffer));
    ZR_ASSIGN_OR_RETURN(TensorRef recv,
                        GuardedInput(arena, std::vector<float>(count, kGuard),
                                     dt, "recv", &recv_buffer));
    ZR_RETURN_IF_ERROR(comm.AllReduce(stream, send, recv, op, name));
    ZR_RETURN_IF_ERROR(
        ExpectGuarded(arena, recv_buffer, expected, What(name, rt, count, dt)));
    ZR_RETURN_IF_ERROR(
        ExpectGuarded(arena, send_buffer, mine,
                      What(absl::StrCat(name, " send"), rt, count, dt)));
    ZR_RETURN_IF_ERROR(comm.AllReduce(stream, send, send, op, name));
    ZR_RETURN_IF_ERROR(
        ExpectGuarded(arena, send_buffer, expected,
                      What(absl::StrCat(name, " in place"), rt, count, dt)));
  }
  return absl::OkStatus();
}

absl::Status BroadcastCase(Runtime& rt, Streams streams, DeviceArena& arena,
                           DType dt) {
  Stream& stream = streams.comm;
  Communicator& comm = rt.world();
  // The last rank: a non-zero root wherever there is more than one rank.
  const int root = comm.size() - 1;
  for (int64_t count : kCounts) {
    std::vector<float> roots(count), mine(count);
    for (int64_t i = 0; i < count; ++i) {
      roots[i] = GatherValue(root, i);
      // Other ranks start with values of their own, all overwritten.
      mine[i] = comm.rank() == root ? roots[i] : 90.0f + comm.rank();
    }
    TensorRef whole;
    ZR_ASSIGN_OR_RETURN(TensorRef buffer,
                        GuardedInput(arena, mine, dt, "buffer", &whole));
    ZR_RETURN_IF_ERROR(comm.Broadcast(stream, buffer, root, "broadcast"));
    ZR_RETURN_IF_ERROR(ExpectGuarded(
        arena, whole, roots,
        What(absl::StrCat("broadcast from rank ", root), rt, count, dt)));
  }
  return absl::OkStatus();
}

// Four collectives back to back on one stream, each reading the previous
// one's result.
absl::Status CollectivesRunInOrderCase(Runtime& rt, Streams streams,
                                       DeviceArena& arena, DType dt) {
  Stream& stream = streams.comm;
  Communicator& comm = rt.world();
  const int n = comm.size();
  const int64_t chunk = 1001;
  std::vector<float> mine(n * chunk), sums(n * chunk);
  for (int64_t j = 0; j < n * chunk; ++j) {
    mine[j] = static_cast<float>(comm.rank() + 1 + j % 5);
    sums[j] = static_cast<float>(n * (n + 1) / 2 + n * (j % 5));
  }
  ZR_ASSIGN_OR_RETURN(TensorRef x, arena.Input(mine, dt, "x"));
  ZR_ASSIGN_OR_RETURN(TensorRef y, arena.Output(chunk, dt, "y"));
  ZR_ASSIGN_OR_RETURN(TensorRef z, arena.Output(n * chunk, dt, "z"));
  ZR_RETURN_IF_ERROR(comm.AllReduce(stream, x, x, ReduceOp::kSum, "sum"));
  // Every rank now holds the same values: their maximum is themselves.
  ZR_RETURN_IF_ERROR(comm.AllReduce(stream, x, x, ReduceOp::kMax, "max"));
  ZR_RETURN_IF_ERROR(comm.ReduceScatter(stream, x, y, "reduce-scatter"));
  ZR_RETURN_IF_ERROR(comm.AllGather(stream, y, z, "all-gather"));
  std::vector<float> expected(n * chunk);
  for (int64_t j = 0; j < n * chunk; ++j) expected[j] = n * sums[j];
  ZR_ASSIGN_OR_RETURN(std::vector<float> actual, arena.Read(z));
  ExpectEqualValues(
      What("sum, max, reduce-scatter, all-gather", rt, n * chunk, dt), actual,
      expected);
  return absl::OkStatus();
}

// The ZeRO-3 pattern: a compute stream produces, a communication stream
// waits on an event and gathers.
absl::Status CollectiveWaitsForEventCase(Runtime& rt, Streams streams,
                                         DeviceArena& arena, DType dt) {
  Stream& stream = streams.comm;
  Stream& compute = streams.compute;
  Communicator& comm = rt.world();
  const int n = comm.size();
  const int64_t count = int64_t{1} << 20;
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> produced,
                      rt.device().CreateEvent());
  ZR_ASSIGN_OR_RETURN(TensorRef x, arena.Output(count, dt, "x"));
  ZR_ASSIGN_OR_RETURN(TensorRef gathered, arena.Output(n * count, dt, "all"));
  runtime::ops::Fill fill;
  fill.args.n = count;
  fill.args.value = static_cast<float>(comm.rank() + 1);
  fill.x = x;
  // x was set up on `stream`; the compute stream must wait for that too.
  ZR_RETURN_IF_ERROR(stream.Record(*produced));
  ZR_RETURN_IF_ERROR(compute.Wait(*produced));
  ZR_RETURN_IF_ERROR(compute.Launch(runtime::KernelCall(fill, "fill")));
  ZR_RETURN_IF_ERROR(compute.Record(*produced));
  ZR_RETURN_IF_ERROR(stream.Wait(*produced));
  ZR_RETURN_IF_ERROR(comm.AllGather(stream, x, gathered, "all-gather"));
  std::vector<float> expected(n * count);
  for (int r = 0; r < n; ++r) {
    std::fill(expected.begin() + r * count, expected.begin() + (r + 1) * count,
              static_cast<float>(r + 1));
  }
  ZR_ASSIGN_OR_RETURN(std::vector<float> actual, arena.Read(gathered));
  ExpectEqualValues(What("all-gather after an event", rt, n * count, dt),
                    actual, expected);
  return absl::OkStatus();
}

absl::Status RankAndSizeCase(Runtime& rt, int ranks) {
  EXPECT_EQ(rt.world_size(), ranks);
  EXPECT_EQ(rt.world().size(), ranks);
  EXPECT_EQ(rt.world().rank(), rt.rank());
  EXPECT_GE(rt.rank(), 0);
  EXPECT_LT(rt.rank(), ranks);
  return absl::OkStatus();
}

}  // namespace

std::vector<ConformanceCase> CollectiveCases(int max_ranks) {
  struct Named {
    const char* name;
    CollectiveBody body;
  };
  const Named all[] = {
      {"AllGather", AllGatherCase},
      {"AllGatherGroup", AllGatherGroupCase},
      {"ReduceScatter", ReduceScatterCase},
      {"AllReduceSum",
       [](Runtime& rt, Streams s, DeviceArena& a, DType dt) {
         return AllReduceCase(rt, s, a, dt, ReduceOp::kSum);
       }},
      {"AllReduceMax",
       [](Runtime& rt, Streams s, DeviceArena& a, DType dt) {
         return AllReduceCase(rt, s, a, dt, ReduceOp::kMax);
       }},
      {"Broadcast", BroadcastCase},
      {"CollectivesRunInOrder", CollectivesRunInOrderCase},
      {"CollectiveWaitsForEvent", CollectiveWaitsForEventCase},
  };
  std::vector<ConformanceCase> cases;
  for (int ranks = 1; ranks <= std::min(max_ranks, 3); ++ranks) {
    const std::string suffix =
        absl::StrCat(ranks, ranks == 1 ? "rank" : "ranks");
    cases.push_back(
        {"Collectives", absl::StrCat("RankAndSize/", suffix), ranks,
         [ranks](Runtime& rt) { return RankAndSizeCase(rt, ranks); }, __FILE__,
         __LINE__});
    for (const Named& named : all) {
      for (DType dtype : {DType::kF32, DType::kBF16}) {
        CollectiveBody body = named.body;
        cases.push_back({"Collectives",
                         absl::StrCat(named.name, "/", suffix, "/",
                                      kernels::DTypeName(dtype)),
                         ranks,
                         [body, dtype](Runtime& rt) {
                           return RunCollectiveCase(rt, dtype, body);
                         },
                         __FILE__, __LINE__});
      }
    }
  }
  return cases;
}

}  // namespace conformance_internal
}  // namespace testing
}  // namespace zero3
