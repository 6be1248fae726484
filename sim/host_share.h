// Copyright 2026 The zero3 Authors.
//
// host_share.h: giving a hardware profile the host a run has.
//
// A profile's host figures describe the machine it was measured on. Its
// memory_bandwidth_by_threads curve lets it stand for a host with other
// core counts: set the cores a rank has, and the cost model reads the
// bandwidth its optimizer threads reach off the curve, up to the node's
// bandwidth.
//
//   sim::SetHostCores(16, 0, &profile);           // whatif
//   --host-cores-per-gpu const sim::ProcessHost h = sim::ThisProcessHost();
//   sim::SetHostCores(h.cores, h.node_cores, &profile);  // train --predict

#ifndef ZERO3_SIM_HOST_SHARE_H_
#define ZERO3_SIM_HOST_SHARE_H_

#include "absl/status/status.h"
#include "sim/profile.pb.h"

namespace zero3 {
namespace sim {

// Sets the cores one rank has (host.cores_per_rank) and the node's
// (host.cores_per_node; 0 gives cores_per_rank x fabric.gpus_per_node, so
// every rank on a full node has its cores_per_rank). Fails naming the
// value when cores_per_rank < 1 or cores_per_node < 0.
absl::Status SetHostCores(int cores_per_rank, int cores_per_node,
                          HardwareProfile* profile);

// The host this process runs on: the CPUs its affinity mask allows (a
// `zero3 launch` rank's share) and the node's online CPUs.
struct ProcessHost {
  int cores = 1;
  int node_cores = 1;
};
ProcessHost ThisProcessHost();

// Gives `profile` the host of this process (ThisProcessHost: its cores of
// the node's), or `cores_per_rank` cores per rank when it is > 0.
absl::Status SetHostOfThisProcess(int cores_per_rank, HardwareProfile* profile);

}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_HOST_SHARE_H_
