// Copyright 2026 The zero3 Authors.
//
// cuda_rank.h: running the engine's rank function on a GPU.
//
// RunCudaRank is how a tool runs one rank of a job on the CUDA backend:
//
//   absl::Status status = cuda::RunCudaRank(
//       [&](runtime::Runtime& rt) -> absl::Status {
//         ZR_ASSIGN_OR_RETURN(auto engine, engine::Engine::Create(..., rt));
//         ...
//       });
//
// It reads this process's rank, world size and local rank from the
// environment (rank_env.h: torchrun-style variables, Slurm, Open MPI; none
// means a single process), picks the GPU (the local rank), has rank 0 hand
// the NCCL unique id to the others (rendezvous.h: TCP at
// MASTER_ADDR:MASTER_PORT, or ZERO3_RENDEZVOUS_FILE), joins the NCCL
// communicator, builds the CudaRuntime, calls `fn` once, and tears it all
// down: an orderly shutdown (NCCL finalize and destroy, memory freed) when
// `fn` succeeds, an abort when it fails, so a failing rank exits at once
// instead of waiting for peers. The returned status is `fn`'s, prefixed
// with the rank, or the bootstrap's or shutdown's error.
//
// NCCL_NVLS_ENABLE (NVLink SHARP multicast) is set to 0 unless the
// environment sets it: the engine does not use it, and on machines whose
// GPUs are shared a program that uses it can take them out of service.
//
// Where the binary was built without the CUDA toolkit, RunCudaRank returns
// Unimplemented and VisibleCudaDevices returns 0, so callers need no
// conditional compilation.
//
// Blocking: RunCudaRank blocks until `fn` returns and the runtime is torn
// down; the bootstrap waits up to ZERO3_RENDEZVOUS_TIMEOUT (default 300 s)
// for the other ranks. Thread-safe to call from one thread per process
// (RunCudaRanksInProcess runs several ranks on threads).

#ifndef ZERO3_BACKENDS_CUDA_CUDA_RANK_H_
#define ZERO3_BACKENDS_CUDA_CUDA_RANK_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "backends/cuda/rank_env.h"
#include "core/runtime/op_timing.h"
#include "core/runtime/runtime.h"

namespace zero3 {
namespace cuda {

struct CudaRankOptions {
  // Limit on pinned host memory per rank, 0 for none
  // (zero3.max_pinned_bytes).
  int64_t max_pinned_bytes = 0;
  // A refused pinned allocation becomes pageable (zero3.pinned_fallback).
  bool pinned_fallback = false;
  // The ranks on this node max_pinned_bytes was shared among (the
  // launcher's variables), and whether it is that default share. With the
  // TCP rendezvous each rank learns how many ranks run on its host; where
  // more do than assumed, a default share is divided again among them
  // (said on the log), so the node's ranks together stay within its
  // budget.
  int64_t assumed_local_ranks = 1;
  bool pinned_budget_is_default = false;
  // Where the rank variables are read; the process environment when unset.
  EnvLookup env;
  // With several ranks: how long one host wait may last before the rank
  // aborts the communicator and exits with kWatchdogExitCode
  // (zero3.collective_timeout_seconds; CudaRuntimeOptions).
  absl::Duration collective_timeout = absl::Minutes(30);
  // Where to say which rank runs on which GPU (one line per rank, written
  // once the communicator is up); nothing when null.
  std::ostream* log = nullptr;
};

// Runs `fn` as this process's rank on its GPU (see the file comment).
absl::Status RunCudaRank(const runtime::RankFunction& fn);
absl::Status RunCudaRank(const CudaRankOptions& options,
                         const runtime::RankFunction& fn);

// Runs `ranks` ranks in this process, rank r on a thread of its own with
// GPU r, joined by one NCCL communicator; ignores the rank environment.
// Returns the first error by rank. For tests (the conformance suite) and
// single-node runs without a launcher. A rank that fails while the others
// wait in a collective leaves them waiting: use it where every rank issues
// the same work.
absl::Status RunCudaRanksInProcess(int ranks, const CudaRankOptions& options,
                                   const runtime::RankFunction& fn);

// Op timing on the GPU of a runtime RunCudaRank made (see
// CudaDevice::StartOpTiming): every operation on its streams is timed from
// here on; TakeOpTimings waits for the device and returns those issued
// since the previous call. InvalidArgument for other runtimes.
absl::Status StartOpTiming(runtime::Runtime& rt);
absl::StatusOr<std::vector<runtime::OpTiming>> TakeOpTimings(
    runtime::Runtime& rt);

// CUDA devices visible to this process; 0 without a driver or a device, or
// without CUDA in the build. Never fails.
int VisibleCudaDevices();

// The PCI bus id of each visible CUDA device in CUDA's order, as sysfs names
// it ("0000:1b:00.0", lower case); empty without a driver or a device, or
// without CUDA in the build. Creates no context. Never fails.
std::vector<std::string> VisibleGpuBusIds();

// Whether this build has the CUDA backend.
bool CudaBackendBuilt();

// What `zero3 --version` says of the backend, one line each: the CUDA
// runtime it was built with, the driver found, each library the backend
// loads (where from, its version) or why it is not found, and the GPUs
// visible. Loads the libraries (cuda_libraries.h); never fails.
std::vector<std::string> DescribeCudaBackend();

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_CUDA_RANK_H_
