// Copyright 2026 The zero3 Authors.
//
// host_share.cc: see host_share.h.

#include "sim/host_share.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/util/parallel_for.h"

namespace zero3 {
namespace sim {

absl::Status SetHostCores(int cores_per_rank, int cores_per_node,
                          HardwareProfile* profile) {
  if (cores_per_rank < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host cores per GPU: expected 1 or more, got ", cores_per_rank));
  }
  if (cores_per_node < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host cores per node: expected 0 or more, got ", cores_per_node));
  }
  HostProfile* h = profile->mutable_host();
  h->set_cores_per_rank(cores_per_rank);
  h->set_cores_per_node(
      cores_per_node > 0
          ? cores_per_node
          : cores_per_rank * std::max(1, profile->fabric().gpus_per_node()));
  return absl::OkStatus();
}

ProcessHost ThisProcessHost() {
  ProcessHost h;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  h.node_cores = online > 0 ? static_cast<int>(online) : 1;
  h.cores = ProcessCores();
  h.node_cores = std::max(h.node_cores, h.cores);
  return h;
}

absl::Status SetHostOfThisProcess(int cores_per_rank,
                                  HardwareProfile* profile) {
  if (cores_per_rank > 0) return SetHostCores(cores_per_rank, 0, profile);
  const ProcessHost host = ThisProcessHost();
  return SetHostCores(host.cores, host.node_cores, profile);
}

}  // namespace sim
}  // namespace zero3
