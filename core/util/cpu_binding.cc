// Copyright 2026 The zero3 Authors.

#include "core/util/cpu_binding.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace zero3 {
namespace {

bool ReadInt(const std::string& path, int* value) {
  std::ifstream in(path);
  return static_cast<bool>(in >> *value);
}

// The node of CPU `id`: its directory holds a link "nodeM".
int NodeOf(const std::string& sysfs, int id) {
  const std::string dir = absl::StrCat(sysfs, "/devices/system/cpu/cpu", id);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int node = -1;
  while (const dirent* e = readdir(d)) {
    absl::string_view name = e->d_name;
    int m = 0;
    if (absl::ConsumePrefix(&name, "node") && absl::SimpleAtoi(name, &m) &&
        m >= 0) {
      node = m;
      break;
    }
  }
  closedir(d);
  return node;
}

}  // namespace

std::vector<Cpu> DescribeCpus(const std::vector<int>& ids,
                              const std::string& sysfs) {
  std::vector<Cpu> cpus;
  for (const int id : ids) {
    Cpu c;
    c.id = id;
    const std::string dir =
        absl::StrCat(sysfs, "/devices/system/cpu/cpu", id, "/topology/");
    if (!ReadInt(dir + "physical_package_id", &c.package) ||
        !ReadInt(dir + "core_id", &c.core)) {
      c.package = 0;
      c.core = -1 - id;  // unknown: a core of its own
    }
    c.node = NodeOf(sysfs, id);
    cpus.push_back(c);
  }
  return cpus;
}

std::vector<Cpu> AllowedCpus() { return DescribeCpus(AffinityCpus()); }

std::vector<int> PciNumaNodes(const std::vector<std::string>& bus_ids,
                              const std::string& sysfs) {
  std::vector<int> nodes;
  for (std::string id : bus_ids) {
    for (char& c : id) c = static_cast<char>(std::tolower(c));
    // "00000000:1b:00.0" (nvidia-smi) is sysfs's "0000:1b:00.0".
    if (id.find(':') == 8 && id.compare(0, 4, "0000") == 0) id = id.substr(4);
    int node = -1;
    if (!ReadInt(absl::StrCat(sysfs, "/bus/pci/devices/", id, "/numa_node"),
                 &node) ||
        node < 0) {
      node = -1;
    }
    nodes.push_back(node);
  }
  return nodes;
}

std::vector<std::vector<int>> NumaCpuSlices(
    const std::vector<Cpu>& cpus, const std::vector<int>& rank_nodes) {
  const int n = static_cast<int>(rank_nodes.size());
  std::map<int, std::vector<int>> ranks_of;  // node -> its ranks
  for (int r = 0; r < n; ++r) ranks_of[rank_nodes[r]].push_back(r);
  std::map<int, std::vector<Cpu>> cpus_of;
  for (const Cpu& c : cpus) cpus_of[c.node].push_back(c);
  if (n == 0 || ranks_of.count(-1) > 0 || cpus_of.count(-1) > 0) {
    return CpuSlices(cpus, n);
  }
  std::vector<std::vector<int>> slices(n);
  for (const auto& [node, ranks] : ranks_of) {
    const std::vector<std::vector<int>> shares =
        CpuSlices(cpus_of[node], static_cast<int>(ranks.size()));
    if (shares.empty()) return CpuSlices(cpus, n);
    for (size_t i = 0; i < ranks.size(); ++i) slices[ranks[i]] = shares[i];
  }
  return slices;
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

absl::Status BindCallingThread(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  // Linux: pid 0 is the calling thread, not the whole process.
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot bind a rank's thread to CPUs ", CpuListText(cpus),
                     ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace zero3
