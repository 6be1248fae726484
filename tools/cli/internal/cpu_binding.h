// Copyright 2026 The zero3 Authors.
//
// cpu_binding.h: which CPUs each local rank of `zero3 launch` runs on.
//
// Each rank's host work (the offloaded optimizer step, the pageable-copy
// staging) uses every CPU it may run on. Two ranks that both think they own
// the node run twice as many threads as there are CPUs, and the step slows
// down by more than half. So the launcher gives each rank an equal share of
// its own CPUs, in whole physical cores (hyperthread siblings stay
// together, and a rank's cores are neighbours, so mostly one socket).
//
// Thread-compatible: plain functions over values, except AllowedCpus, which
// reads this process's affinity and /sys.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_CPU_BINDING_H_
#define ZERO3_TOOLS_CLI_INTERNAL_CPU_BINDING_H_

#include <string>
#include <vector>

namespace zero3 {
namespace cli {
namespace internal {

struct Cpu {
  int id = 0;       // the logical CPU number
  int package = 0;  // physical_package_id
  int core = 0;     // core_id within the package
};

// The CPUs this process may run on, with their topology from
// /sys/devices/system/cpu (a CPU whose topology cannot be read counts as a
// core of its own).
std::vector<Cpu> AllowedCpus();

// Splits `cpus` into `n` groups of whole cores, cores ordered by package and
// lowest CPU number; group sizes differ by at most one core. Empty when
// there are fewer cores than `n` (then ranks are better left unbound).
std::vector<std::vector<int>> CpuSlices(const std::vector<Cpu>& cpus, int n);

// "0-7,16-23".
std::string CpuListText(const std::vector<int>& cpus);

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_CPU_BINDING_H_
