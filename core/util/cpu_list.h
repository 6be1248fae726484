// Copyright 2026 The zero3 Authors.
//
// cpu_list.h: the CPUs this process may run on, and CPU numbers as Linux
// writes CPU lists ("0-7,16-23").

#ifndef ZERO3_CORE_UTIL_CPU_LIST_H_
#define ZERO3_CORE_UTIL_CPU_LIST_H_

#include <string>
#include <vector>

namespace zero3 {

// The CPUs this process's affinity mask allows (which a launcher, Slurm,
// MPI or numactl may have narrowed), ascending; empty where it cannot be
// read.
std::vector<int> AffinityCpus();

// `cpus` (ascending) as ranges: "0-3,8,10-11"; "" for none.
std::string CpuListText(const std::vector<int>& cpus);

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_CPU_LIST_H_
