// Copyright 2026 The zero3 Authors.
//
// cuda_backend.h: core/runtime on one CUDA GPU, for one rank.
//
// CudaRuntime is one rank's Runtime: one GPU (CudaDevice), the NCCL
// communicator over all ranks (NcclCommunicator, nccl_communicator.h), host
// memory and the clock. One process drives one GPU; rank_env.h and
// cuda_rank.h say how a process finds its rank and GPU and builds this.
//
// How the interface maps onto CUDA:
//
//  - Streams are cudaStreamNonBlocking streams (no implicit ordering with
//    the legacy default stream); events are created with
//    cudaEventDisableTiming (CreateTimedEvent makes timed ones).
//  - Copy is cudaMemcpyAsync in any direction between device, pinned and
//    pageable memory, so it blocks the host exactly where CUDA does
//    (pageable device-to-host, and pageable host-to-device above the
//    driver's staging size), as stream.h describes. A host-to-host copy
//    waits for the stream and copies on the host (memmove), in stream
//    order. Copy2D is cudaMemcpy2DAsync (device to device); Memset is
//    cudaMemsetAsync (device memory).
//  - Launch checks that the call touches device memory only and hands it to
//    the device's KernelLauncher (kernel_launcher.h).
//  - Device memory comes from a CachingAllocator (caching_allocator.h): no
//    cudaMalloc or cudaFree once the pools are warm, and a freed block is
//    reused only after the work enqueued before its Free, on any stream of
//    the device, is done. memory_stats() counts the bytes requested.
//    A device Buffer's data() is its device address: for kernels and
//    copies, never to be dereferenced on the host.
//  - Pinned host memory is cudaHostAlloc'd, after the Runtime's
//    PinnedMemoryTracker has admitted it (the one accounting point for
//    pinned bytes and their limit). Pageable memory is page-aligned
//    anonymous memory (mmap) from 1 MiB, 64-byte-aligned heap memory below.
//    Both are zero-filled, as Runtime::AllocateHost promises.
//  - RunHostTask calls the task's `run` on the calling thread (its
//    `threads` is a hint for the task's own code) after checking that it
//    declares host memory only. Ordering against copies is the caller's,
//    through Synchronize and events, exactly as on the simulator.
//  - NowNanos is std::chrono::steady_clock; MarkSpan is a no-op. Where the
//    device time goes: CudaDevice::StartOpTiming times every operation
//    with events (or profile with Nsight Systems).
//  - Every CUDA and NCCL error becomes a Status naming the call
//    (cuda_status.h). Errors of asynchronous work surface at the next call
//    that waits for it.
//
// Ownership: the CudaRuntime owns its CudaDevice, communicator, kernel
// launcher and every device and host buffer it allocated (the ones the
// engine did not free are released at shutdown). Streams and events are
// owned by whoever created them and must be destroyed before the runtime.
//
// Threads: a CudaRuntime and everything it hands out are driven by the one
// host thread that created it (the CUDA device is current on that thread).
// The PinnedMemoryTracker is thread-safe.

#ifndef ZERO3_BACKENDS_CUDA_CUDA_BACKEND_H_
#define ZERO3_BACKENDS_CUDA_CUDA_BACKEND_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "backends/cuda/caching_allocator.h"
#include "backends/cuda/kernel_launcher.h"
#include "backends/cuda/rendezvous.h"
#include "core/runtime/op_timing.h"
#include "core/runtime/runtime.h"
#include "core/runtime/watchdog.h"

namespace zero3 {
namespace cuda {

class CudaDevice;
class NcclCommunicator;

class CudaEvent final : public runtime::Event {
 public:
  ~CudaEvent() override;

  // Blocks the host until the captured work is done (cudaEventSynchronize).
  absl::Status Synchronize() override;
  // cudaEventQuery: done, not ready, or the error as a Status.
  absl::StatusOr<bool> Query() override;

  cudaEvent_t raw() const { return event_; }
  bool timing() const { return timing_; }

 private:
  friend class CudaDevice;
  friend class CudaStream;
  CudaEvent(const CudaDevice* device, cudaEvent_t event, bool timing)
      : device_(device), event_(event), timing_(timing) {}

  const CudaDevice* device_;
  cudaEvent_t event_;
  bool timing_;
};

class CudaStream final : public runtime::Stream {
 public:
  ~CudaStream() override;

  absl::string_view name() const override { return name_; }
  absl::Status Copy(const runtime::BufferSlice& dst,
                    const runtime::BufferSlice& src,
                    absl::string_view label) override;
  absl::Status Copy2D(const runtime::BufferSlice& dst, int64_t dst_pitch,
                      const runtime::BufferSlice& src, int64_t src_pitch,
                      int64_t row_bytes, int64_t rows,
                      absl::string_view label) override;
  absl::Status Memset(const runtime::BufferSlice& dst, uint8_t value,
                      absl::string_view label) override;
  absl::Status Launch(const runtime::KernelCall& call) override;
  absl::Status Record(runtime::Event& event) override;
  absl::Status Wait(const runtime::Event& event) override;
  absl::Status Synchronize() override;

  cudaStream_t raw() const { return stream_; }
  CudaDevice& device() const { return *device_; }

 private:
  friend class CudaDevice;
  CudaStream(CudaDevice* device, cudaStream_t stream, std::string name)
      : device_(device),
        stream_(stream),
        name_(std::move(name)),
        wait_label_("stream '" + name_ + "'") {}

  CudaDevice* device_;
  cudaStream_t stream_;
  std::string name_;
  std::string wait_label_;  // what a host wait on it is, for the watchdog
};

class CudaDevice final : public runtime::Device {
 public:
  ~CudaDevice() override;

  absl::string_view name() const override { return name_; }
  int64_t total_memory_bytes() const override { return total_memory_; }
  absl::StatusOr<runtime::Buffer> Allocate(int64_t bytes,
                                           absl::string_view label) override;
  absl::Status Free(const runtime::Buffer& buffer) override;
  absl::StatusOr<std::unique_ptr<runtime::Stream>> CreateStream(
      absl::string_view name) override;
  absl::StatusOr<std::unique_ptr<runtime::Event>> CreateEvent() override;
  // cudaDeviceSynchronize: every stream of this device, NCCL's included.
  absl::Status Synchronize() override;
  runtime::MemoryStats memory_stats() const override;
  // cudaMemGetInfo's free memory of this device (total less in use when
  // the query fails).
  int64_t free_memory_bytes() const override;

  // An event that records timestamps, for CudaEvent::ElapsedMillis.
  absl::StatusOr<std::unique_ptr<runtime::Event>> CreateTimedEvent() override;
  absl::StatusOr<int64_t> ElapsedNanos(const runtime::Event& start,
                                       const runtime::Event& end) override;

  // The CUDA device ordinal.
  int ordinal() const { return ordinal_; }
  const CachingAllocator::Stats& allocator_stats() const {
    return allocator_.stats();
  }
  // Returns cached device blocks to CUDA (after waiting for pending frees).
  absl::Status ReleaseCachedMemory() { return allocator_.ReleaseCache(); }

  // Counts work enqueued on the device; fences made with no new work since
  // the previous one reuse it. Called by streams and the communicator.
  void NoteWork() { ++work_; }

  // Op timing, to see where a step's device time goes (zero3 train
  // --profile-ops): while on, every copy, memset, kernel and collective
  // issued on this device's streams is bracketed by two timed events
  // (TimedOp). Costs two cudaEventRecord calls per operation.
  absl::Status StartOpTiming();
  bool op_timing() const { return epoch_ != nullptr; }
  // Waits for the device, then returns the operations issued since
  // StartOpTiming or the previous call, with their device start and end in
  // ns since StartOpTiming. Host tasks run meanwhile come with them, on the
  // stream "host", timed by the host clock from the moment the epoch event
  // was seen complete (a few microseconds' skew against the device times).
  absl::StatusOr<std::vector<runtime::OpTiming>> TakeOpTimings();
  // Records a host task's span (host clock, steady_clock ns) while op timing
  // is on; does nothing otherwise.
  void RecordHostOp(absl::string_view label, int64_t start_ns, int64_t end_ns);

 private:
  friend class CudaEvent;
  friend class CudaRuntime;
  friend class CudaStream;
  class AllocatorBackend;

  CudaDevice(int ordinal, std::string name, int64_t total_memory,
             std::unique_ptr<KernelLauncher> launcher);

  absl::Status Init();
  // Frees every block and fence event (shutdown).
  absl::Status ReleaseAll();
  void Unregister(CudaStream* stream);

  // Fences for the allocator (see CachingAllocator::Backend).
  absl::StatusOr<uint64_t> MakeFence();
  absl::StatusOr<bool> FenceReached(uint64_t fence);
  absl::Status WaitFence(uint64_t fence);
  absl::StatusOr<cudaEvent_t> PooledEvent();

  const int ordinal_;
  const std::string name_;
  const int64_t total_memory_;
  std::unique_ptr<KernelLauncher> launcher_;
  std::unique_ptr<AllocatorBackend> allocator_backend_;
  CachingAllocator allocator_;
  // Device address of each live buffer, to its id (stale handles).
  absl::flat_hash_map<void*, uint64_t> live_ids_;
  std::vector<CudaStream*> streams_;

  struct Fence {
    uint64_t id;
    std::vector<cudaEvent_t> events;
  };
  std::deque<Fence> fences_;  // not yet known reached, in id order
  // Recorded on streams as they were destroyed; part of the next fence.
  std::vector<cudaEvent_t> retired_events_;
  std::vector<cudaEvent_t> spare_events_;
  uint64_t work_ = 0;
  uint64_t fenced_work_ = 0;  // work_ at the last fence
  uint64_t last_fence_ = 0;

  // Op timing (see StartOpTiming).
  friend class TimedOp;
  struct PendingOp {
    cudaEvent_t start;
    cudaEvent_t end;
    std::string stream;
    std::string label;
  };
  cudaEvent_t TimingEvent();
  cudaEvent_t epoch_ = nullptr;
  int64_t host_epoch_ns_ = 0;  // steady_clock when epoch_ was seen complete
  std::vector<PendingOp> pending_ops_;
  std::vector<runtime::OpTiming> host_ops_;
  std::vector<cudaEvent_t> spare_timing_events_;

  // Shared with the runtime's host buffers: ids unique per runtime.
  uint64_t* next_buffer_id_ = nullptr;
  // The runtime's watchdog (with several ranks), told of each host wait.
  runtime::Watchdog* watchdog_ = nullptr;
};

// Brackets one stream operation with timed events while the device's op
// timing is on; does nothing otherwise. Construct it just before enqueuing
// the operation; the end is recorded when it goes out of scope.
class TimedOp {
 public:
  TimedOp(CudaDevice& device, cudaStream_t stream,
          absl::string_view stream_name, absl::string_view label);
  ~TimedOp();
  TimedOp(const TimedOp&) = delete;
  TimedOp& operator=(const TimedOp&) = delete;

 private:
  CudaDevice& device_;
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  absl::string_view stream_name_;
  absl::string_view label_;
};

struct CudaRuntimeOptions {
  // CUDA device ordinal (made current on the creating thread).
  int device = 0;
  int rank = 0;
  int world_size = 1;
  // The NCCL unique id all ranks share (ncclUniqueId bytes, made by rank 0).
  // With one rank it may be empty: the runtime makes its own.
  std::string nccl_id;
  // Limit on pinned host memory, 0 for none (zero3.max_pinned_bytes).
  int64_t max_pinned_bytes = 0;
  // A refused pinned allocation becomes pageable (zero3.pinned_fallback).
  bool pinned_fallback = false;
  // Makes the kernel launcher; NewDefaultKernelLauncher when unset.
  KernelLauncherFactory make_launcher;
  // With several ranks: the longest one host wait (for the device, and so
  // for peers in a collective) may last before the rank aborts the
  // communicator and exits (runtime::Watchdog;
  // zero3.collective_timeout_seconds); NCCL's asynchronous errors do the
  // same at once. InfiniteDuration: no timeout.
  absl::Duration collective_timeout = absl::Minutes(30);
  // The rendezvous's connections to the other ranks' processes (null:
  // none): the watchdog checks them, and an orderly Shutdown says goodbye.
  std::shared_ptr<PeerLinks> peer_links;
};

// The exit status of a rank its watchdog ended (a peer lost or hung, or an
// asynchronous NCCL error): 3, apart from failures (1) and bad input (2).
inline constexpr int kWatchdogExitCode = 3;

class CudaRuntime final : public runtime::Runtime {
 public:
  // Makes `options.device` current on this thread, creates the device and
  // joins the NCCL communicator: blocks until every rank has joined.
  static absl::StatusOr<std::unique_ptr<CudaRuntime>> Create(
      CudaRuntimeOptions options);

  // Shuts down (Shutdown) if not done yet, ignoring errors.
  ~CudaRuntime() override;

  // Orderly end: waits for the device, finalizes and destroys the NCCL
  // communicator, frees every host and device buffer. Returns the first
  // error. Idempotent.
  absl::Status Shutdown();
  // End after a failure: aborts the NCCL communicator (so no collective
  // waits on ranks that will never arrive), then frees memory.
  void Abort();

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  runtime::Device& device() override { return *device_; }
  runtime::Communicator& world() override;
  // Subgroups are not formed on GPUs (tensor parallelism is a timing study
  // on the simulator): all ranks give world(), anything else Unimplemented.
  absl::StatusOr<runtime::Communicator*> Group(
      const std::vector<int>& ranks) override;
  absl::StatusOr<runtime::Buffer> AllocateHost(
      int64_t bytes, runtime::HostMemoryKind kind,
      absl::string_view label) override;
  absl::Status FreeHost(const runtime::Buffer& buffer) override;
  absl::Status RunHostTask(const runtime::HostTask& task) override;
  bool computes_values() const override { return true; }
  int64_t NowNanos() override;
  runtime::PinnedMemoryTracker& pinned_memory() override { return pinned_; }

  CudaDevice& cuda_device() { return *device_; }

 private:
  struct HostAllocation {
    void* ptr;
    int64_t bytes;
    enum class How { kCudaHostAlloc, kMmap, kHeap } how;
    int64_t mapped_bytes;  // kMmap: the length passed to mmap
  };

  CudaRuntime(int rank, int world_size, int64_t max_pinned_bytes,
              bool pinned_fallback);
  absl::Status ReleaseHost(const HostAllocation& allocation);
  absl::Status ReleaseMemory();

  const int rank_;
  const int world_size_;
  runtime::PinnedMemoryTracker pinned_;
  uint64_t next_buffer_id_ = 0;
  std::unique_ptr<runtime::Watchdog> watchdog_;  // several ranks only
  std::shared_ptr<PeerLinks> peer_links_;
  std::unique_ptr<CudaDevice> device_;
  std::unique_ptr<NcclCommunicator> comm_;
  // comm_ while the watchdog's thread may use it (probe, abort).
  absl::Mutex comm_mu_;
  NcclCommunicator* comm_for_watchdog_ ABSL_GUARDED_BY(comm_mu_) = nullptr;
  // Starts the watchdog (several ranks, before the communicator joins).
  void StartWatchdog(absl::Duration timeout);
  // The watchdog no longer touches comm_.
  void HideCommFromWatchdog();
  absl::flat_hash_map<uint64_t, HostAllocation> host_;
  bool shut_down_ = false;
};

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_CUDA_BACKEND_H_
