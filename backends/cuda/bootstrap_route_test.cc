// Copyright 2026 The zero3 Authors.

#include "backends/cuda/bootstrap_route.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(BootstrapRouteTest, LoopbackIsReachedThroughLo) {
  absl::StatusOr<Route> r = RouteTo("127.0.0.1", 29500);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->address, "127.0.0.1");
  EXPECT_EQ(r->interface, "lo");
  EXPECT_EQ(BootstrapNote(*r, std::nullopt), "");  // rank 0's own node
}

TEST(BootstrapRouteTest, UnresolvableHostIsAnError) {
  EXPECT_FALSE(RouteTo("no-such-host.invalid", 29500).ok());
}

// NCCL_SOCKET_IFNAME's syntax: prefixes, "=" exact names, "^" exclusions.
TEST(BootstrapRouteTest, IfnameSyntaxAsNcclReadsIt) {
  EXPECT_TRUE(IfnameAllows("eth", "eth0"));
  EXPECT_TRUE(IfnameAllows("ib,eth", "eth1"));
  EXPECT_FALSE(IfnameAllows("ib", "eth0"));
  EXPECT_TRUE(IfnameAllows("=eth0", "eth0"));
  EXPECT_FALSE(IfnameAllows("=eth", "eth0"));
  EXPECT_FALSE(IfnameAllows("^docker,lo,eth", "eth0"));
  EXPECT_TRUE(IfnameAllows("^docker,lo", "eth0"));
  EXPECT_FALSE(IfnameAllows("^=eth0", "eth0"));
}

TEST(BootstrapRouteTest, NoteAdvisesTheInterfaceThatReachedRankZero) {
  const Route eth{"eth0", "10.0.0.5"};
  EXPECT_THAT(BootstrapNote(eth, std::nullopt),
              AllOf(HasSubstr("through eth0 (10.0.0.5)"),
                    HasSubstr("NCCL_SOCKET_IFNAME is unset"),
                    HasSubstr("NCCL_SOCKET_IFNAME=eth0")));
  EXPECT_EQ(BootstrapNote(eth, std::string("eth")), "");
  EXPECT_THAT(BootstrapNote(eth, std::string("ib0")),
              AllOf(HasSubstr("warning"), HasSubstr("'ib0' rules out"),
                    HasSubstr("NCCL_SOCKET_IFNAME=eth0")));
}

}  // namespace
}  // namespace cuda
}  // namespace zero3
