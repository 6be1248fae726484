// Copyright 2026 The zero3 Authors.
//
// counting_runtime.h: a Runtime that counts the pageable host memory of
// another.
//
// Runtimes count device memory (Device::memory_stats) and pinned host
// memory (PinnedMemoryTracker) but not pageable host memory. The memory
// estimate runs the engine on a CountingRuntime wrapped around a simulated
// rank to learn that too: every call goes to the wrapped runtime, and
// pageable AllocateHost / FreeHost are counted on the way. Thread-compatible,
// like the runtime it wraps.

#ifndef ZERO3_TOOLS_PREFLIGHT_COUNTING_RUNTIME_H_
#define ZERO3_TOOLS_PREFLIGHT_COUNTING_RUNTIME_H_

#include <cstdint>
#include <map>
#include <vector>

#include "core/runtime/runtime.h"

namespace zero3 {
namespace preflight {

class CountingRuntime final : public runtime::Runtime {
 public:
  // `inner` must outlive this.
  explicit CountingRuntime(runtime::Runtime& inner) : inner_(inner) {}

  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  runtime::Device& device() override { return inner_.device(); }
  runtime::Communicator& world() override { return inner_.world(); }
  absl::StatusOr<runtime::Communicator*> Group(
      const std::vector<int>& ranks) override {
    return inner_.Group(ranks);
  }
  absl::StatusOr<runtime::Buffer> AllocateHost(
      int64_t bytes, runtime::HostMemoryKind kind,
      absl::string_view label) override;
  absl::Status FreeHost(const runtime::Buffer& buffer) override;
  absl::Status RunHostTask(const runtime::HostTask& task) override {
    return inner_.RunHostTask(task);
  }
  absl::StatusOr<std::unique_ptr<runtime::DriveFile>> OpenDriveFile(
      const runtime::DriveFileOptions& options) override {
    return inner_.OpenDriveFile(options);
  }
  bool computes_values() const override { return inner_.computes_values(); }
  int64_t NowNanos() override { return inner_.NowNanos(); }
  void MarkSpan(absl::string_view name, int64_t begin_ns,
                int64_t end_ns) override {
    inner_.MarkSpan(name, begin_ns, end_ns);
  }
  runtime::PinnedMemoryTracker& pinned_memory() override {
    return inner_.pinned_memory();
  }

  // Pageable host bytes allocated through this and not freed, and their
  // high-water mark.
  int64_t pageable_bytes_in_use() const { return pageable_in_use_; }
  int64_t pageable_peak_bytes() const { return pageable_peak_; }

 private:
  runtime::Runtime& inner_;
  std::map<uint64_t, int64_t> pageable_;  // buffer id -> bytes
  int64_t pageable_in_use_ = 0;
  int64_t pageable_peak_ = 0;
};

}  // namespace preflight
}  // namespace zero3

#endif  // ZERO3_TOOLS_PREFLIGHT_COUNTING_RUNTIME_H_
