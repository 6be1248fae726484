// Copyright 2026 The zero3 Authors.

#include "core/runtime/host_memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/runtime/pinned_memory.h"

namespace zero3 {
namespace runtime {
namespace {

// Limits at or above this are the kernel's way of saying "none".
constexpr int64_t kNoLimit = int64_t{1} << 60;

// "MemTotal:  24000000 kB" -> bytes; -1 when the key is absent.
int64_t MeminfoBytes(const std::string& meminfo, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, key) || !absl::ConsumePrefix(&line, ":")) {
      continue;
    }
    std::vector<absl::string_view> parts =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t value = 0;
    if (parts.empty() || !absl::SimpleAtoi(parts[0], &value)) return -1;
    const bool kb = parts.size() > 1 && parts[1] == "kB";
    return kb ? value * 1024 : value;
  }
  return -1;
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int64_t HostMemoryInfo::AvailableBytes() const {
  int64_t a = available_bytes;
  if (cgroup_limit_bytes >= 0) {
    const int64_t left =
        std::max<int64_t>(0, cgroup_limit_bytes - cgroup_usage_bytes);
    a = a < 0 ? left : std::min(a, left);
  }
  return a;
}

int64_t HostMemoryInfo::CapacityBytes() const {
  int64_t c = total_bytes;
  if (cgroup_limit_bytes >= 0) {
    c = c < 0 ? cgroup_limit_bytes : std::min(c, cgroup_limit_bytes);
  }
  return c;
}

std::string HostMemoryInfo::Describe() const {
  std::string s = available_bytes < 0
                      ? std::string("MemAvailable unknown")
                      : absl::StrCat(FormatBytes(available_bytes),
                                     " available (MemAvailable)");
  if (cgroup_limit_bytes >= 0) {
    absl::StrAppend(&s, ", cgroup limit ", FormatBytes(cgroup_limit_bytes),
                    " with ", FormatBytes(cgroup_usage_bytes), " in use");
  }
  return s;
}

HostMemoryInfo ParseHostMemory(const std::string& meminfo,
                               const std::string& cgroup_limit,
                               const std::string& cgroup_usage) {
  HostMemoryInfo info;
  info.total_bytes = MeminfoBytes(meminfo, "MemTotal");
  info.available_bytes = MeminfoBytes(meminfo, "MemAvailable");
  int64_t limit = 0;
  if (absl::SimpleAtoi(absl::StripAsciiWhitespace(cgroup_limit), &limit) &&
      limit >= 0 && limit < kNoLimit) {
    info.cgroup_limit_bytes = limit;
    int64_t usage = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(cgroup_usage), &usage)) {
      info.cgroup_usage_bytes = usage;
    }
  }
  return info;
}

HostMemoryInfo ReadHostMemory() {
  const std::string meminfo = ReadSmallFile("/proc/meminfo");
  std::string limit = ReadSmallFile("/sys/fs/cgroup/memory.max");
  std::string usage = ReadSmallFile("/sys/fs/cgroup/memory.current");
  if (limit.empty()) {
    limit = ReadSmallFile("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    usage = ReadSmallFile("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  }
  return ParseHostMemory(meminfo, limit, usage);
}

int64_t DefaultPinnedBudget(const HostMemoryInfo& host, int local_ranks) {
  const int64_t capacity = host.CapacityBytes();
  if (capacity <= 0) return 0;
  return std::max<int64_t>(1, capacity / 2 / std::max(1, local_ranks));
}

}  // namespace runtime
}  // namespace zero3
