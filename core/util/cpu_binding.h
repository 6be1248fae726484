// Copyright 2026 The zero3 Authors.
//
// cpu_binding.h: which CPUs each local rank runs on, as processes of
// `zero3 launch` or as threads of one process (several GPUs driven from one
// process: calibrate --gpus N, the conformance suite).
//
// Each rank's host work (the offloaded optimizer step, the pageable-copy
// staging) uses every CPU it may run on. Two ranks that both think they own
// the node run twice as many threads as there are CPUs, and the step slows
// down by more than half. So the launcher gives each rank an equal share of
// its own CPUs, in whole physical cores (hyperthread siblings stay
// together, and a rank's cores are neighbours, so mostly one socket). Where
// the GPUs' and the CPUs' NUMA nodes are known, each rank's share comes from
// the node of its GPU (local rank r drives GPU r): its host copies and its
// host optimizer then use the memory next to its PCIe root.
//
// Thread-compatible: plain functions over values, except those that read
// this process's affinity and sysfs (under `sysfs`, "/sys" outside
// tests).

#ifndef ZERO3_CORE_UTIL_CPU_BINDING_H_
#define ZERO3_CORE_UTIL_CPU_BINDING_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/util/cpu_list.h"

namespace zero3 {

struct Cpu {
  int id = 0;       // the logical CPU number
  int package = 0;  // physical_package_id
  int core = 0;     // core_id within the package
  int node = -1;    // NUMA node; -1 unknown
};

// CPUs `ids` with their topology from SYSFS/devices/system/cpu (a CPU whose
// topology cannot be read counts as a core of its own, on no known node).
std::vector<Cpu> DescribeCpus(const std::vector<int>& ids,
                              const std::string& sysfs = "/sys");

// The CPUs this process may run on (its affinity mask, which Slurm, MPI or
// numactl may have narrowed), described.
std::vector<Cpu> AllowedCpus();

// The NUMA node of each PCI device ("0000:1b:00.0"; an 8-digit domain as
// nvidia-smi writes it is accepted) from SYSFS/bus/pci/devices/ID/numa_node;
// -1 where unknown (no such file, or the platform says -1).
std::vector<int> PciNumaNodes(const std::vector<std::string>& bus_ids,
                              const std::string& sysfs = "/sys");

// `n` slices for ranks whose GPUs sit on NUMA nodes `rank_nodes` (size n):
// the ranks of each node share that node's cores (CpuSlices of them). Falls
// back to CpuSlices(cpus, n) when a rank's node is unknown, a CPU's node is
// unknown, or a node has fewer cores than ranks. Empty as CpuSlices.
std::vector<std::vector<int>> NumaCpuSlices(const std::vector<Cpu>& cpus,
                                            const std::vector<int>& rank_nodes);

// Splits `cpus` into `n` groups of whole cores, cores ordered by package and
// lowest CPU number; group sizes differ by at most one core. Empty when
// there are fewer cores than `n` (then ranks are better left unbound).
std::vector<std::vector<int>> CpuSlices(const std::vector<Cpu>& cpus, int n);

// Restricts the calling thread (and the threads it starts afterwards) to
// `cpus`; ProcessCores() then counts them on that thread. Fails naming the
// CPUs when the system refuses.
absl::Status BindCallingThread(const std::vector<int>& cpus);

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_CPU_BINDING_H_
