// Copyright 2026 The zero3 Authors.
//
// cpu_list.h: CPU numbers as Linux writes CPU lists ("0-7,16-23").

#ifndef ZERO3_CORE_UTIL_CPU_LIST_H_
#define ZERO3_CORE_UTIL_CPU_LIST_H_

#include <string>
#include <vector>

namespace zero3 {

// `cpus` (ascending) as ranges: "0-3,8,10-11"; "" for none.
std::string CpuListText(const std::vector<int>& cpus);

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_CPU_LIST_H_
