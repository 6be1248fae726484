// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/cpu_binding.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

bool ReadInt(const std::string& path, int* value) {
  std::ifstream in(path);
  return static_cast<bool>(in >> *value);
}

}  // namespace

std::vector<Cpu> AllowedCpus() {
  std::vector<Cpu> cpus;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int id = 0; id < CPU_SETSIZE; ++id) {
    if (!CPU_ISSET(id, &set)) continue;
    Cpu c;
    c.id = id;
    const std::string dir =
        absl::StrCat("/sys/devices/system/cpu/cpu", id, "/topology/");
    if (!ReadInt(dir + "physical_package_id", &c.package) ||
        !ReadInt(dir + "core_id", &c.core)) {
      c.package = 0;
      c.core = -1 - id;  // unknown: a core of its own
    }
    cpus.push_back(c);
  }
  return cpus;
}

std::vector<std::vector<int>> CpuSlices(const std::vector<Cpu>& cpus, int n) {
  // Cores in (package, lowest CPU) order, each with its logical CPUs.
  std::map<std::pair<int, int>, std::vector<int>> by_core;
  for (const Cpu& c : cpus) by_core[{c.package, c.core}].push_back(c.id);
  std::vector<std::pair<int, std::vector<int>>> cores;  // (package, cpus)
  for (auto& [key, ids] : by_core) {
    std::sort(ids.begin(), ids.end());
    cores.emplace_back(key.first, std::move(ids));
  }
  std::sort(cores.begin(), cores.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second[0] < b.second[0];
  });
  const int total = static_cast<int>(cores.size());
  if (n < 1 || total < n) return {};
  std::vector<std::vector<int>> slices(n);
  int next = 0;
  for (int r = 0; r < n; ++r) {
    const int count = total / n + (r < total % n ? 1 : 0);
    for (int k = 0; k < count; ++k, ++next) {
      const std::vector<int>& ids = cores[next].second;
      slices[r].insert(slices[r].end(), ids.begin(), ids.end());
    }
    std::sort(slices[r].begin(), slices[r].end());
  }
  return slices;
}

std::string CpuListText(const std::vector<int>& cpus) {
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!text.empty()) text += ",";
    text +=
        j == i ? absl::StrCat(cpus[i]) : absl::StrCat(cpus[i], "-", cpus[j]);
    i = j + 1;
  }
  return text;
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
