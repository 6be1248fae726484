// Copyright 2026 The zero3 Authors.

#include "backends/cuda/bootstrap_route.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace zero3 {
namespace cuda {
namespace {

// The numeric form of `addr` (IPv4 or IPv6).
std::string AddressText(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr,
              text, sizeof(text));
  } else if (addr->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr,
              text, sizeof(text));
  }
  return text;
}

// The interface that holds `address`, or "".
std::string InterfaceOf(const std::string& address) {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return "";
  std::string name;
  for (const ifaddrs* i = all; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    if (AddressText(i->ifa_addr) == address) {
      name = i->ifa_name;
      break;
    }
  }
  freeifaddrs(all);
  return name;
}

}  // namespace

absl::StatusOr<Route> RouteTo(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  const int gai = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (gai != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", host, ": ", gai_strerror(gai)));
  }
  absl::Status last =
      absl::UnavailableError(absl::StrCat("no route to ", host));
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    const bool ok =
        connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
    const int error = errno;
    close(fd);
    if (!ok) {
      last = absl::UnavailableError(
          absl::StrCat("no route to ", host, ": ", std::strerror(error)));
      continue;
    }
    Route route;
    route.address = AddressText(reinterpret_cast<const sockaddr*>(&local));
    route.interface = InterfaceOf(route.address);
    freeaddrinfo(found);
    return route;
  }
  freeaddrinfo(found);
  return last;
}

bool IfnameAllows(const std::string& ifname, const std::string& interface) {
  absl::string_view list = ifname;
  const bool exclude = absl::ConsumePrefix(&list, "^");
  const bool exact = absl::ConsumePrefix(&list, "=");
  bool listed = false;
  for (absl::string_view name : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    if (exact ? interface == name : absl::StartsWith(interface, name)) {
      listed = true;
    }
  }
  return exclude ? !listed : listed;
}

std::string BootstrapNote(const Route& route,
                          const std::optional<std::string>& ifname) {
  if (route.interface.empty() || route.interface == "lo" ||
      absl::StartsWith(route.address, "127.") || route.address == "::1") {
    return "";
  }
  const std::string where =
      absl::StrCat(route.interface, " (", route.address, ")");
  if (!ifname.has_value()) {
    return absl::StrCat(
        "note: this rank reaches rank 0 through ", where,
        "; NCCL_SOCKET_IFNAME is unset, so NCCL picks its own interface: if "
        "joining the communicator hangs, set NCCL_SOCKET_IFNAME=",
        route.interface, " on every node");
  }
  if (IfnameAllows(*ifname, route.interface)) return "";
  return absl::StrCat("warning: this rank reaches rank 0 through ", where,
                      ", which NCCL_SOCKET_IFNAME='", *ifname,
                      "' rules out for NCCL; if joining the communicator "
                      "hangs, set NCCL_SOCKET_IFNAME=",
                      route.interface, " on every node");
}

}  // namespace cuda
}  // namespace zero3
