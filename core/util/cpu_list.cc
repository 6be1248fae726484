// Copyright 2026 The zero3 Authors.

#include "core/util/cpu_list.h"

#include <sched.h>

#include "absl/strings/str_cat.h"

namespace zero3 {

std::vector<int> AffinityCpus() {
  std::vector<int> ids;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return ids;
  for (int id = 0; id < CPU_SETSIZE; ++id) {
    if (CPU_ISSET(id, &set)) ids.push_back(id);
  }
  return ids;
}

std::string CpuListText(const std::vector<int>& cpus) {
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    absl::StrAppend(&text, text.empty() ? "" : ",", cpus[i],
                    j == i ? "" : absl::StrCat("-", cpus[j]));
    i = j + 1;
  }
  return text;
}

}  // namespace zero3
