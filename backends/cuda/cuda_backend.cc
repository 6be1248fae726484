// Copyright 2026 The zero3 Authors.

#include "backends/cuda/cuda_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/nccl_communicator.h"
#include "core/runtime/argument_checks.h"
#include "core/util/parallel_for.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cuda {

using runtime::Buffer;
using runtime::BufferSlice;
using runtime::MemorySpace;

namespace {

// Pageable allocations from this size are anonymous mappings: page-aligned
// and zero-filled by the kernel, faulted in when allocated.
constexpr int64_t kMmapThreshold = int64_t{1} << 20;
constexpr size_t kHeapAlignment = 64;

int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t PageSize() {
  static const int64_t page = sysconf(_SC_PAGESIZE);
  return page;
}

absl::Status CheckMemory(const BufferSlice& slice, absl::string_view what,
                         absl::string_view label) {
  if (!slice.buffer().valid() || slice.buffer().data() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", label, "': buffer without memory"));
  }
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------
// CudaEvent

CudaEvent::~CudaEvent() { cudaEventDestroy(event_); }

absl::Status CudaEvent::Synchronize() {
  const runtime::Watchdog::Wait wait =
      runtime::Watchdog::Enter(device_->watchdog_, "an event (host wait)");
  ZR_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_));
  return absl::OkStatus();
}

absl::StatusOr<bool> CudaEvent::Query() {
  const cudaError_t error = cudaEventQuery(event_);
  if (error == cudaSuccess) return true;
  if (error == cudaErrorNotReady) return false;
  return CudaStatus(error, "cudaEventQuery(event_)");
}

// ---------------------------------------------------------------------------
// CudaStream

CudaStream::~CudaStream() {
  device_->Unregister(this);
  cudaStreamDestroy(stream_);
}

absl::Status CudaStream::Copy(const BufferSlice& dst, const BufferSlice& src,
                              absl::string_view label) {
  if (dst.bytes() != src.bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy '", label, "': destination has ", dst.bytes(),
                     " bytes, source ", src.bytes()));
  }
  if (dst.bytes() == 0) return absl::OkStatus();
  ZR_RETURN_IF_ERROR(CheckMemory(dst, "copy", label));
  ZR_RETURN_IF_ERROR(CheckMemory(src, "copy", label));
  device_->NoteWork();
  if (runtime::IsHost(dst.space()) && runtime::IsHost(src.space())) {
    // cudaMemcpyAsync would do this synchronously too; doing it here keeps
    // it in stream order without a trip through the driver.
    const runtime::Watchdog::Wait wait = runtime::Watchdog::Enter(
        device_->watchdog_, absl::StrCat("stream '", name_, "' (host copy)"));
    ZR_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    std::memmove(dst.data(), src.data(), static_cast<size_t>(dst.bytes()));
    return absl::OkStatus();
  }
  // cudaMemcpyDefault infers the direction from the pointers (unified
  // addressing); pinned and pageable host memory are told apart by the
  // driver, which is what makes pageable copies block as stream.h says.
  const TimedOp timed(*device_, stream_, name_, label);
  const cudaError_t error =
      cudaMemcpyAsync(dst.data(), src.data(), static_cast<size_t>(dst.bytes()),
                      cudaMemcpyDefault, stream_);
  if (error != cudaSuccess) {
    return Annotate(CudaStatus(error, "cudaMemcpyAsync"),
                    absl::StrCat("copy '", label, "' (",
                                 runtime::MemorySpaceName(src.space()), " to ",
                                 runtime::MemorySpaceName(dst.space()), ", ",
                                 dst.bytes(), " bytes)"));
  }
  return absl::OkStatus();
}

absl::Status CudaStream::Copy2D(const BufferSlice& dst, int64_t dst_pitch,
                                const BufferSlice& src, int64_t src_pitch,
                                int64_t row_bytes, int64_t rows,
                                absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckCopy2D(dst, dst_pitch, src, src_pitch,
                                          row_bytes, rows, label));
  if (rows == 0 || row_bytes == 0) return absl::OkStatus();
  ZR_RETURN_IF_ERROR(CheckMemory(dst, "copy2d", label));
  ZR_RETURN_IF_ERROR(CheckMemory(src, "copy2d", label));
  device_->NoteWork();
  const TimedOp timed(*device_, stream_, name_, label);
  const cudaError_t error = cudaMemcpy2DAsync(
      dst.data(), static_cast<size_t>(dst_pitch), src.data(),
      static_cast<size_t>(src_pitch), static_cast<size_t>(row_bytes),
      static_cast<size_t>(rows), cudaMemcpyDeviceToDevice, stream_);
  if (error != cudaSuccess) {
    return Annotate(CudaStatus(error, "cudaMemcpy2DAsync"),
                    absl::StrCat("copy2d '", label, "'"));
  }
  return absl::OkStatus();
}

absl::Status CudaStream::Memset(const BufferSlice& dst, uint8_t value,
                                absl::string_view label) {
  if (runtime::IsHost(dst.space())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "memset '", label, "': target is host memory; write it in a HostTask"));
  }
  if (dst.bytes() == 0) return absl::OkStatus();
  ZR_RETURN_IF_ERROR(CheckMemory(dst, "memset", label));
  device_->NoteWork();
  const TimedOp timed(*device_, stream_, name_, label);
  const cudaError_t error = cudaMemsetAsync(
      dst.data(), value, static_cast<size_t>(dst.bytes()), stream_);
  if (error != cudaSuccess) {
    return Annotate(CudaStatus(error, "cudaMemsetAsync"),
                    absl::StrCat("memset '", label, "'"));
  }
  return absl::OkStatus();
}

absl::Status CudaStream::Launch(const runtime::KernelCall& call) {
  for (const runtime::Access& a : call.Accesses()) {
    if (runtime::IsHost(a.slice.space())) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel '", call.label, "' (", call.OpName(),
                       ") touches host buffer; kernels run on device memory"));
    }
  }
  device_->NoteWork();
  const TimedOp timed(*device_, stream_, name_, call.label);
  return device_->launcher_->Launch(call, stream_);
}

absl::Status CudaStream::Record(runtime::Event& event) {
  auto* e = dynamic_cast<CudaEvent*>(&event);
  if (e == nullptr || e->device_ != device_) {
    return absl::InvalidArgumentError("event belongs to another device");
  }
  ZR_CUDA_RETURN_IF_ERROR(cudaEventRecord(e->event_, stream_));
  return absl::OkStatus();
}

absl::Status CudaStream::Wait(const runtime::Event& event) {
  const auto* e = dynamic_cast<const CudaEvent*>(&event);
  if (e == nullptr || e->device_ != device_) {
    return absl::InvalidArgumentError("event belongs to another device");
  }
  // An event never recorded makes this a no-op, as the interface requires.
  ZR_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, e->event_, 0));
  return absl::OkStatus();
}

absl::Status CudaStream::Synchronize() {
  const runtime::Watchdog::Wait wait =
      runtime::Watchdog::Enter(device_->watchdog_, wait_label_);
  const cudaError_t error = cudaStreamSynchronize(stream_);
  if (error != cudaSuccess) {
    return Annotate(CudaStatus(error, "cudaStreamSynchronize"),
                    absl::StrCat("stream '", name_, "'"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// CudaDevice

class CudaDevice::AllocatorBackend final : public CachingAllocator::Backend {
 public:
  explicit AllocatorBackend(CudaDevice* device) : device_(device) {}

  absl::StatusOr<void*> Reserve(int64_t bytes) override {
    void* ptr = nullptr;
    ZR_CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, static_cast<size_t>(bytes)));
    return ptr;
  }
  absl::Status Release(void* ptr) override {
    ZR_CUDA_RETURN_IF_ERROR(cudaFree(ptr));
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> MakeFence() override { return device_->MakeFence(); }
  absl::StatusOr<bool> FenceReached(uint64_t fence) override {
    return device_->FenceReached(fence);
  }
  absl::Status WaitFence(uint64_t fence) override {
    return device_->WaitFence(fence);
  }

 private:
  CudaDevice* device_;
};

CudaDevice::CudaDevice(int ordinal, std::string name, int64_t total_memory,
                       std::unique_ptr<KernelLauncher> launcher)
    : ordinal_(ordinal),
      name_(std::move(name)),
      total_memory_(total_memory),
      launcher_(std::move(launcher)),
      allocator_backend_(std::make_unique<AllocatorBackend>(this)),
      allocator_(allocator_backend_.get()) {}

CudaDevice::~CudaDevice() { (void)ReleaseAll(); }

absl::Status CudaDevice::ReleaseAll() {
  absl::Status result = allocator_.ReleaseAll();
  live_ids_.clear();
  for (Fence& f : fences_) {
    for (cudaEvent_t e : f.events) cudaEventDestroy(e);
  }
  fences_.clear();
  for (cudaEvent_t e : retired_events_) cudaEventDestroy(e);
  retired_events_.clear();
  for (cudaEvent_t e : spare_events_) cudaEventDestroy(e);
  spare_events_.clear();
  for (PendingOp& op : pending_ops_) {
    spare_timing_events_.push_back(op.start);
    spare_timing_events_.push_back(op.end);
  }
  pending_ops_.clear();
  for (cudaEvent_t e : spare_timing_events_) cudaEventDestroy(e);
  spare_timing_events_.clear();
  if (epoch_ != nullptr) cudaEventDestroy(epoch_);
  epoch_ = nullptr;
  return result;
}

void CudaDevice::Unregister(CudaStream* stream) {
  streams_.erase(std::remove(streams_.begin(), streams_.end(), stream),
                 streams_.end());
  // Work the stream still has queued may use buffers freed later: the next
  // fence waits for it through this event.
  if (work_ == 0) return;
  absl::StatusOr<cudaEvent_t> e = PooledEvent();
  if (!e.ok()) return;
  if (cudaEventRecord(*e, stream->raw()) == cudaSuccess) {
    retired_events_.push_back(*e);
  } else {
    (void)cudaGetLastError();
    spare_events_.push_back(*e);
  }
}

absl::StatusOr<Buffer> CudaDevice::Allocate(int64_t bytes,
                                            absl::string_view label) {
  if (bytes < 0) return absl::InvalidArgumentError("negative allocation");
  const CachingAllocator::Stats& s = allocator_.stats();
  auto exhausted = [&](absl::string_view why) {
    size_t free_bytes = 0, total_bytes = 0;
    std::string driver;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      driver = absl::StrCat("; the driver reports ",
                            runtime::FormatBytes(free_bytes), " free of ",
                            runtime::FormatBytes(total_bytes),
                            " (other processes on this GPU count too)");
    } else {
      (void)cudaGetLastError();
    }
    return absl::ResourceExhaustedError(
        absl::StrCat(why, " on GPU ", ordinal_, " (", name_, ")", driver));
  };
  if (bytes > total_memory_) {
    return exhausted(absl::StrCat(
        "device out of memory allocating ", runtime::FormatBytes(bytes),
        " for ", label, ": more than the device's ",
        runtime::FormatBytes(total_memory_), "; ",
        runtime::FormatBytes(s.bytes_in_use), " in use by ", s.allocations,
        " allocations"));
  }
  absl::StatusOr<void*> ptr = allocator_.Allocate(bytes, label);
  if (!ptr.ok()) {
    if (absl::IsResourceExhausted(ptr.status())) {
      return exhausted(ptr.status().message());
    }
    return ptr.status();
  }
  const uint64_t id = ++*next_buffer_id_;
  live_ids_[*ptr] = id;
  return Buffer(id, bytes, MemorySpace::kDevice, *ptr);
}

absl::Status CudaDevice::Free(const Buffer& buffer) {
  auto it = live_ids_.find(buffer.data());
  if (buffer.space() != MemorySpace::kDevice || it == live_ids_.end() ||
      it->second != buffer.id()) {
    return absl::InvalidArgumentError(
        absl::StrCat("freeing device buffer ", buffer.id(),
                     " that is not live on GPU ", ordinal_));
  }
  live_ids_.erase(it);
  return allocator_.Free(buffer.data());
}

absl::StatusOr<std::unique_ptr<runtime::Stream>> CudaDevice::CreateStream(
    absl::string_view name) {
  cudaStream_t stream = nullptr;
  ZR_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::unique_ptr<CudaStream> s(
      new CudaStream(this, stream, std::string(name)));
  streams_.push_back(s.get());
  return std::unique_ptr<runtime::Stream>(std::move(s));
}

absl::StatusOr<std::unique_ptr<runtime::Event>> CudaDevice::CreateEvent() {
  cudaEvent_t event = nullptr;
  ZR_CUDA_RETURN_IF_ERROR(
      cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return std::unique_ptr<runtime::Event>(new CudaEvent(this, event, false));
}

absl::StatusOr<std::unique_ptr<runtime::Event>> CudaDevice::CreateTimedEvent() {
  cudaEvent_t event = nullptr;
  ZR_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDefault));
  return std::unique_ptr<runtime::Event>(new CudaEvent(this, event, true));
}

absl::StatusOr<int64_t> CudaDevice::ElapsedNanos(const runtime::Event& start,
                                                 const runtime::Event& end) {
  const auto* a = dynamic_cast<const CudaEvent*>(&start);
  const auto* b = dynamic_cast<const CudaEvent*>(&end);
  if (a == nullptr || b == nullptr || a->device_ != this ||
      b->device_ != this) {
    return absl::InvalidArgumentError("ElapsedNanos: event of another device");
  }
  if (!a->timing_ || !b->timing_) {
    return absl::InvalidArgumentError(
        "ElapsedNanos needs events from CreateTimedEvent");
  }
  float ms = 0;
  const cudaError_t error = cudaEventElapsedTime(&ms, a->event_, b->event_);
  if (error == cudaErrorNotReady || error == cudaErrorInvalidResourceHandle) {
    (void)cudaGetLastError();
    return absl::FailedPreconditionError(
        "ElapsedNanos: an event is not recorded or not complete");
  }
  ZR_CUDA_RETURN_IF_ERROR(error);
  return static_cast<int64_t>(static_cast<double>(ms) * 1e6);
}

absl::Status CudaDevice::Synchronize() {
  const runtime::Watchdog::Wait wait =
      runtime::Watchdog::Enter(watchdog_, "the device (every stream)");
  ZR_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return absl::OkStatus();
}

int64_t CudaDevice::free_memory_bytes() const {
  size_t free = 0;
  size_t total = 0;
  if (cudaSetDevice(ordinal_) != cudaSuccess ||
      cudaMemGetInfo(&free, &total) != cudaSuccess) {
    return runtime::Device::free_memory_bytes();
  }
  return static_cast<int64_t>(free);
}

runtime::MemoryStats CudaDevice::memory_stats() const {
  const CachingAllocator::Stats& s = allocator_.stats();
  runtime::MemoryStats stats;
  stats.bytes_in_use = s.bytes_in_use;
  stats.peak_bytes_in_use = s.peak_bytes_in_use;
  stats.allocations = s.allocations;
  return stats;
}

absl::Status CudaDevice::StartOpTiming() {
  if (epoch_ != nullptr) return absl::OkStatus();
  cudaEvent_t e = nullptr;
  ZR_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));
  // The legacy default stream: recorded now, ordered with nothing.
  cudaError_t error = cudaEventRecord(e, nullptr);
  if (error == cudaSuccess) error = cudaEventSynchronize(e);
  if (error != cudaSuccess) {
    cudaEventDestroy(e);
    return CudaStatus(error, "cudaEventRecord (op timing epoch)");
  }
  host_epoch_ns_ = SteadyNanos();
  epoch_ = e;
  return absl::OkStatus();
}

void CudaDevice::RecordHostOp(absl::string_view label, int64_t start_ns,
                              int64_t end_ns) {
  if (epoch_ == nullptr) return;
  host_ops_.push_back({"host", std::string(label), start_ns - host_epoch_ns_,
                       end_ns - host_epoch_ns_});
}

cudaEvent_t CudaDevice::TimingEvent() {
  if (!spare_timing_events_.empty()) {
    cudaEvent_t e = spare_timing_events_.back();
    spare_timing_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  if (cudaEventCreate(&e) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return e;
}

absl::StatusOr<std::vector<runtime::OpTiming>> CudaDevice::TakeOpTimings() {
  if (epoch_ == nullptr) {
    return absl::FailedPreconditionError("op timing is off (StartOpTiming)");
  }
  ZR_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  std::vector<runtime::OpTiming> out;
  out.reserve(pending_ops_.size());
  absl::Status status;
  for (PendingOp& op : pending_ops_) {
    float start_ms = 0, end_ms = 0;
    cudaError_t error = cudaEventElapsedTime(&start_ms, epoch_, op.start);
    if (error == cudaSuccess) {
      error = cudaEventElapsedTime(&end_ms, epoch_, op.end);
    }
    if (error != cudaSuccess && status.ok()) {
      status = Annotate(CudaStatus(error, "cudaEventElapsedTime"),
                        absl::StrCat("timing '", op.label, "'"));
    }
    spare_timing_events_.push_back(op.start);
    spare_timing_events_.push_back(op.end);
    out.push_back({std::move(op.stream), std::move(op.label),
                   static_cast<int64_t>(static_cast<double>(start_ms) * 1e6),
                   static_cast<int64_t>(static_cast<double>(end_ms) * 1e6)});
  }
  pending_ops_.clear();
  for (runtime::OpTiming& op : host_ops_) out.push_back(std::move(op));
  host_ops_.clear();
  if (!status.ok()) return status;
  return out;
}

TimedOp::TimedOp(CudaDevice& device, cudaStream_t stream,
                 absl::string_view stream_name, absl::string_view label)
    : device_(device),
      stream_(stream),
      stream_name_(stream_name),
      label_(label) {
  if (!device_.op_timing()) return;
  start_ = device_.TimingEvent();
  if (start_ != nullptr && cudaEventRecord(start_, stream_) != cudaSuccess) {
    (void)cudaGetLastError();
    device_.spare_timing_events_.push_back(start_);
    start_ = nullptr;
  }
}

TimedOp::~TimedOp() {
  if (start_ == nullptr) return;
  cudaEvent_t end = device_.TimingEvent();
  if (end == nullptr || cudaEventRecord(end, stream_) != cudaSuccess) {
    (void)cudaGetLastError();
    device_.spare_timing_events_.push_back(start_);
    if (end != nullptr) device_.spare_timing_events_.push_back(end);
    return;
  }
  device_.pending_ops_.push_back(
      {start_, end, std::string(stream_name_), std::string(label_)});
}

absl::StatusOr<cudaEvent_t> CudaDevice::PooledEvent() {
  if (!spare_events_.empty()) {
    cudaEvent_t e = spare_events_.back();
    spare_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  ZR_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

absl::StatusOr<uint64_t> CudaDevice::MakeFence() {
  if (work_ == 0) return uint64_t{0};  // nothing was ever enqueued
  if (work_ == fenced_work_ && retired_events_.empty()) return last_fence_;
  Fence fence;
  fence.id = last_fence_ + 1;
  fence.events = std::move(retired_events_);
  retired_events_.clear();
  // On failure the caller keeps the freed block out of use for good (see
  // CachingAllocator::Free), so the events can simply be recycled.
  auto recycle = [&] {
    spare_events_.insert(spare_events_.end(), fence.events.begin(),
                         fence.events.end());
  };
  for (CudaStream* s : streams_) {
    absl::StatusOr<cudaEvent_t> e = PooledEvent();
    if (!e.ok()) {
      recycle();
      return e.status();
    }
    const cudaError_t error = cudaEventRecord(*e, s->raw());
    if (error != cudaSuccess) {
      spare_events_.push_back(*e);
      recycle();
      return CudaStatus(error, "cudaEventRecord (fence for a freed buffer)");
    }
    fence.events.push_back(*e);
  }
  fences_.push_back(std::move(fence));
  last_fence_ = fences_.back().id;
  fenced_work_ = work_;
  return last_fence_;
}

absl::StatusOr<bool> CudaDevice::FenceReached(uint64_t fence) {
  while (!fences_.empty() && fences_.front().id <= fence) {
    Fence& f = fences_.front();
    while (!f.events.empty()) {
      const cudaError_t state = cudaEventQuery(f.events.back());
      // Not ready is not an error: it leaves cudaGetLastError() alone.
      if (state == cudaErrorNotReady) return false;
      ZR_CUDA_RETURN_IF_ERROR(state);
      spare_events_.push_back(f.events.back());
      f.events.pop_back();
    }
    fences_.pop_front();
  }
  return true;
}

absl::Status CudaDevice::WaitFence(uint64_t fence) {
  while (!fences_.empty() && fences_.front().id <= fence) {
    Fence& f = fences_.front();
    while (!f.events.empty()) {
      ZR_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(f.events.back()));
      spare_events_.push_back(f.events.back());
      f.events.pop_back();
    }
    fences_.pop_front();
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// CudaRuntime

CudaRuntime::CudaRuntime(int rank, int world_size, int64_t max_pinned_bytes,
                         bool pinned_fallback)
    : rank_(rank),
      world_size_(world_size),
      pinned_(max_pinned_bytes, pinned_fallback) {}

absl::StatusOr<std::unique_ptr<CudaRuntime>> CudaRuntime::Create(
    CudaRuntimeOptions options) {
  if (options.world_size < 1 || options.rank < 0 ||
      options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", options.rank, " of ", options.world_size, " is not a rank"));
  }
  ZR_CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  // Creates the context now, so its cost and its errors are here.
  ZR_CUDA_RETURN_IF_ERROR(cudaFree(nullptr));
  cudaDeviceProp prop;
  ZR_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, options.device));

  KernelLauncherFactory make_launcher =
      options.make_launcher ? options.make_launcher : NewDefaultKernelLauncher;
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<KernelLauncher> launcher,
                      make_launcher(options.device));

  std::unique_ptr<CudaRuntime> rt(
      new CudaRuntime(options.rank, options.world_size,
                      options.max_pinned_bytes, options.pinned_fallback));
  rt->device_.reset(new CudaDevice(options.device, prop.name,
                                   static_cast<int64_t>(prop.totalGlobalMem),
                                   std::move(launcher)));
  rt->device_->next_buffer_id_ = &rt->next_buffer_id_;

  std::string id = options.nccl_id;
  if (id.empty() && options.world_size == 1) {
    ZR_ASSIGN_OR_RETURN(id, NcclCommunicator::NewUniqueId());
  }
  rt->peer_links_ = options.peer_links;
  if (options.world_size > 1) rt->StartWatchdog(options.collective_timeout);
  {
    const runtime::Watchdog::Wait wait = runtime::Watchdog::Enter(
        rt->watchdog_.get(),
        "every rank to join the NCCL communicator (ncclCommInitRank)");
    ZR_ASSIGN_OR_RETURN(
        rt->comm_, NcclCommunicator::Create(rt->device_.get(), id, options.rank,
                                            options.world_size));
  }
  {
    // NCCL's buffers exist before anyone reads the free memory (the memory
    // check, the engine's budgets).
    const runtime::Watchdog::Wait wait = runtime::Watchdog::Enter(
        rt->watchdog_.get(), "NCCL's warm-up collectives");
    ZR_RETURN_IF_ERROR(rt->comm_->WarmUp());
  }
  rt->comm_->set_watchdog(rt->watchdog_.get());
  absl::MutexLock lock(&rt->comm_mu_);
  rt->comm_for_watchdog_ = rt->comm_.get();
  return rt;
}

// The watchdog probes NCCL's asynchronous error; when it fires, it aborts
// the communicator (collectives of this rank stop waiting for the others)
// and ends the process: the host thread may be blocked in the driver, and
// the launcher or the other ranks' watchdogs end the rest of the job.
void CudaRuntime::StartWatchdog(absl::Duration timeout) {
  runtime::WatchdogOptions o;
  o.rank = rank_;
  o.timeout = timeout;
  watchdog_ = std::make_unique<runtime::Watchdog>(
      o, [this](const std::string& message) {
        std::fprintf(stderr, "zero3: error: %s\n", message.c_str());
        std::fflush(stderr);
        {
          absl::MutexLock lock(&comm_mu_);
          if (comm_for_watchdog_ != nullptr) comm_for_watchdog_->Abort();
        }
        std::_Exit(kWatchdogExitCode);
      });
  watchdog_->AddProbe([this]() -> absl::Status {
    absl::MutexLock lock(&comm_mu_);
    if (comm_for_watchdog_ == nullptr) return absl::OkStatus();
    return comm_for_watchdog_->AsyncError();
  });
  if (peer_links_ != nullptr) {
    PeerLinks* links = peer_links_.get();
    watchdog_->AddProbe([links] { return links->Check(); });
  }
}

void CudaRuntime::HideCommFromWatchdog() {
  absl::MutexLock lock(&comm_mu_);
  comm_for_watchdog_ = nullptr;
}

CudaRuntime::~CudaRuntime() { (void)Shutdown(); }

absl::StatusOr<runtime::Communicator*> CudaRuntime::Group(
    const std::vector<int>& ranks) {
  bool all = static_cast<int>(ranks.size()) == world_size();
  for (size_t i = 0; all && i < ranks.size(); ++i) {
    all = ranks[i] == static_cast<int>(i);
  }
  if (all) return &world();
  return absl::UnimplementedError(
      "communicator subgroups are not available on the CUDA backend");
}

runtime::Communicator& CudaRuntime::world() { return *comm_; }

absl::Status CudaRuntime::ReleaseMemory() {
  absl::Status result;
  for (const auto& [id, allocation] : host_) {
    result.Update(ReleaseHost(allocation));
  }
  host_.clear();
  if (device_ != nullptr) result.Update(device_->ReleaseAll());
  return result;
}

absl::Status CudaRuntime::Shutdown() {
  if (shut_down_) return absl::OkStatus();
  shut_down_ = true;
  absl::Status result;
  {
    const runtime::Watchdog::Wait wait =
        runtime::Watchdog::Enter(watchdog_.get(), "the device at shutdown");
    result = CudaStatus(cudaDeviceSynchronize(),
                        "cudaDeviceSynchronize (at shutdown)");
  }
  HideCommFromWatchdog();
  if (comm_ != nullptr) {
    if (result.ok()) {
      // ncclCommFinalize waits for the peers' outstanding work too.
      const runtime::Watchdog::Wait wait = runtime::Watchdog::Enter(
          watchdog_.get(), "the other ranks to finish (ncclCommFinalize)");
      result.Update(comm_->Destroy());
    } else {
      comm_->Abort();
    }
    comm_.reset();
  }
  watchdog_.reset();
  // The other ranks may end now without taking this one for lost.
  if (peer_links_ != nullptr && result.ok()) peer_links_->Goodbye();
  result.Update(ReleaseMemory());
  device_.reset();
  return result;
}

void CudaRuntime::Abort() {
  if (shut_down_) return;
  shut_down_ = true;
  HideCommFromWatchdog();
  watchdog_.reset();
  if (comm_ != nullptr) {
    comm_->Abort();
    comm_.reset();
  }
  (void)ReleaseMemory();
  device_.reset();
}

absl::StatusOr<Buffer> CudaRuntime::AllocateHost(int64_t bytes,
                                                 runtime::HostMemoryKind kind,
                                                 absl::string_view label) {
  if (bytes < 0) return absl::InvalidArgumentError("negative allocation");
  HostAllocation a;
  a.bytes = bytes;
  a.mapped_bytes = 0;
  const size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  if (kind == runtime::HostMemoryKind::kPinned) {
    ZR_RETURN_IF_ERROR(pinned_.Allocate(bytes, label));
    a.how = HostAllocation::How::kCudaHostAlloc;
    void* ptr = nullptr;
    const cudaError_t error = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
    if (error != cudaSuccess) {
      pinned_.Free(bytes);
      return Annotate(
          CudaStatus(error, "cudaHostAlloc"),
          absl::StrCat("pinning ", runtime::FormatBytes(bytes), " for ", label,
                       " (", pinned_.Summary(),
                       "); with too little host RAM to pin, lower "
                       "zero3.max_pinned_bytes, set zero3.pinned_fallback: "
                       "pageable, or set pin_memory: false in "
                       "zero_optimization.offload_optimizer / offload_param"));
    }
    // cudaHostAlloc does not clear the memory; the interface promises zeros.
    ParallelZero(ptr, bytes, ProcessCores());
    a.ptr = ptr;
  } else if (bytes >= kMmapThreshold) {
    const int64_t page = PageSize();
    a.mapped_bytes = (bytes + page - 1) / page * page;
    void* ptr =
        mmap(nullptr, static_cast<size_t>(a.mapped_bytes),
             PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ptr == MAP_FAILED) {
      return absl::ResourceExhaustedError(
          absl::StrCat("host out of memory allocating ",
                       runtime::FormatBytes(bytes), " for ", label));
    }
    // Large pageable buffers are the optimizer's master and moments: fault
    // them in now, on the process's cores and in huge pages where allowed,
    // not page by page in the first host step (a minute for a 7B model).
#ifdef MADV_HUGEPAGE
    madvise(ptr, static_cast<size_t>(a.mapped_bytes), MADV_HUGEPAGE);
#endif
    ParallelZero(ptr, a.mapped_bytes, ProcessCores());
    a.how = HostAllocation::How::kMmap;
    a.ptr = ptr;
  } else {
    void* ptr = nullptr;
    if (posix_memalign(&ptr, kHeapAlignment, size) != 0) {
      return absl::ResourceExhaustedError(
          absl::StrCat("host out of memory allocating ",
                       runtime::FormatBytes(bytes), " for ", label));
    }
    std::memset(ptr, 0, size);
    a.how = HostAllocation::How::kHeap;
    a.ptr = ptr;
  }
  const uint64_t id = ++next_buffer_id_;
  host_[id] = a;
  return Buffer(id, bytes,
                kind == runtime::HostMemoryKind::kPinned
                    ? MemorySpace::kPinnedHost
                    : MemorySpace::kPageableHost,
                a.ptr);
}

absl::Status CudaRuntime::ReleaseHost(const HostAllocation& a) {
  switch (a.how) {
    case HostAllocation::How::kCudaHostAlloc:
      pinned_.Free(a.bytes);
      ZR_CUDA_RETURN_IF_ERROR(cudaFreeHost(a.ptr));
      break;
    case HostAllocation::How::kMmap:
      munmap(a.ptr, static_cast<size_t>(a.mapped_bytes));
      break;
    case HostAllocation::How::kHeap:
      std::free(a.ptr);
      break;
  }
  return absl::OkStatus();
}

absl::Status CudaRuntime::FreeHost(const Buffer& buffer) {
  auto it = host_.find(buffer.id());
  if (it == host_.end() || it->second.ptr != buffer.data()) {
    return absl::InvalidArgumentError(
        absl::StrCat("freeing host buffer ", buffer.id(),
                     " that is not live on rank ", rank_));
  }
  const HostAllocation a = it->second;
  host_.erase(it);
  return ReleaseHost(a);
}

absl::Status CudaRuntime::RunHostTask(const runtime::HostTask& task) {
  for (const BufferSlice& s : task.reads) {
    if (!runtime::IsHost(s.space())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "host task '", task.label, "' reads device memory; copy it first"));
    }
  }
  for (const BufferSlice& s : task.writes) {
    if (!runtime::IsHost(s.space())) {
      return absl::InvalidArgumentError(
          absl::StrCat("host task '", task.label,
                       "' writes device memory; copy it instead"));
    }
  }
  const int64_t start = SteadyNanos();
  absl::Status status = task.run ? task.run() : absl::OkStatus();
  // Fixed work keeps the thread busy, as the framework's own code would.
  for (const int64_t ran = SteadyNanos();
       SteadyNanos() - ran < task.fixed_nanos;) {
  }
  if (device_->op_timing() && (task.run || task.fixed_nanos > 0)) {
    device_->RecordHostOp(task.label, start, SteadyNanos());
  }
  return status;
}

int64_t CudaRuntime::NowNanos() { return SteadyNanos(); }

}  // namespace cuda
}  // namespace zero3
