// Copyright 2026 The zero3 Authors.

#include "core/util/cpu_list.h"

#include "absl/strings/str_cat.h"

namespace zero3 {

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
