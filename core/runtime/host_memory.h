// Copyright 2026 The zero3 Authors.
//
// host_memory.h: how much host memory this process may use.
//
// Reads /proc/meminfo (MemTotal, MemAvailable) and the memory limit of the
// process's cgroup (v2: memory.max and memory.current; v1:
// memory.limit_in_bytes and memory.usage_in_bytes), so that a run can be
// checked against what the machine, or its container, will give it before
// anything is allocated. The parsing is separate from the reading, for
// tests.

#ifndef ZERO3_CORE_RUNTIME_HOST_MEMORY_H_
#define ZERO3_CORE_RUNTIME_HOST_MEMORY_H_

#include <cstdint>
#include <string>

namespace zero3 {
namespace runtime {

struct HostMemoryInfo {
  int64_t total_bytes = -1;         // MemTotal; -1 when unknown
  int64_t available_bytes = -1;     // MemAvailable; -1 when unknown
  int64_t cgroup_limit_bytes = -1;  // -1: no limit (or none found)
  int64_t cgroup_usage_bytes = 0;

  // What a new allocation can use: MemAvailable, or what is left under the
  // cgroup's limit where that is lower; -1 when nothing is known.
  int64_t AvailableBytes() const;
  // The memory of the node for this process: MemTotal, or the cgroup's
  // limit where lower; -1 when nothing is known.
  int64_t CapacityBytes() const;
  // "19.20 GiB available (MemAvailable), cgroup limit 16.00 GiB".
  std::string Describe() const;
};

// The texts of /proc/meminfo and of the cgroup's limit and usage files
// (empty where absent; "max" is no limit).
HostMemoryInfo ParseHostMemory(const std::string& meminfo,
                               const std::string& cgroup_limit,
                               const std::string& cgroup_usage);

// This process's host memory, read now. Never fails: what cannot be read
// is unknown (-1).
HostMemoryInfo ReadHostMemory();

// The default per-rank pinned-memory budget (zero3.max_pinned_bytes 0): half
// of the node's capacity divided among `local_ranks`; 0 (no limit) when the
// capacity is unknown.
int64_t DefaultPinnedBudget(const HostMemoryInfo& host, int local_ranks);

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_HOST_MEMORY_H_
