// Copyright 2026 The zero3 Authors.
//
// bootstrap_route.h: which network interface reaches rank 0, and whether
// NCCL's bootstrap will use it.
//
// On nodes with several interfaces (a management network, a container
// bridge, InfiniBand's IPoIB), NCCL picks the interface of its bootstrap
// and its socket transport itself unless NCCL_SOCKET_IFNAME names it, and
// a pick that cannot reach the other nodes hangs ncclCommInitRank. The
// rendezvous already reached rank 0 (MASTER_ADDR), so the interface that
// route takes is one that works: each rank says which it is, and warns
// where NCCL_SOCKET_IFNAME rules it out.
//
// Thread-compatible: plain functions (RouteTo asks the kernel).

#ifndef ZERO3_BACKENDS_CUDA_BOOTSTRAP_ROUTE_H_
#define ZERO3_BACKENDS_CUDA_BOOTSTRAP_ROUTE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace zero3 {
namespace cuda {

struct Route {
  std::string interface;  // "eth0"; empty when no interface has the address
  std::string address;    // this host's address on it, "10.0.0.5"
};

// The interface and local address this host's kernel uses to reach
// `host`:`port` (a UDP socket connected there; nothing is sent).
absl::StatusOr<Route> RouteTo(const std::string& host, int port);

// Whether NCCL_SOCKET_IFNAME's value `ifname` lets NCCL use `interface`,
// with NCCL's syntax: a comma-separated list of prefixes, "=" before the
// list for exact names, "^" to exclude the ones listed instead.
bool IfnameAllows(const std::string& ifname, const std::string& interface);

// The line a rank prints about `route` to rank 0 with NCCL_SOCKET_IFNAME
// `ifname` (unset: nullopt): where NCCL may pick another interface or is
// told to avoid this one, the advice to set it; empty where the route is
// loopback (rank 0's own node) or NCCL is told to use it.
std::string BootstrapNote(const Route& route,
                          const std::optional<std::string>& ifname);

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_BOOTSTRAP_ROUTE_H_
