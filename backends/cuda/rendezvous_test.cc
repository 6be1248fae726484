// Copyright 2026 The zero3 Authors.

#include "backends/cuda/rendezvous.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/util/check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cuda {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

// A stand-in for an ncclUniqueId: 128 bytes, zeros and all.
std::string FakeId(uint32_t seed) {
  std::mt19937 gen(seed);
  std::string id(128, '\0');
  for (size_t i = 0; i < id.size(); ++i) {
    id[i] = static_cast<char>(i % 7 == 0 ? 0 : gen() & 0xFF);
  }
  return id;
}

std::string TempPath(absl::string_view name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name, ".", getpid());
}

RendezvousConfig Tcp(int rank, int world, int port,
                     absl::Duration timeout = absl::Seconds(20)) {
  RendezvousConfig c;
  c.rank = rank;
  c.world_size = world;
  c.host = "127.0.0.1";
  c.port = port;
  c.timeout = timeout;
  return c;
}

// Runs ranks 0..n-1 on threads; rank r starts after delays[r].
std::vector<absl::StatusOr<std::string>> RunRanks(
    const std::vector<RendezvousConfig>& configs, const std::string& payload,
    const std::vector<absl::Duration>& delays = {}) {
  std::vector<absl::StatusOr<std::string>> results(configs.size(),
                                                   std::string());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < configs.size(); ++r) {
    threads.emplace_back([&, r] {
      if (r < delays.size()) absl::SleepFor(delays[r]);
      results[r] = ShareFromRankZero(configs[r], r == 0 ? payload : "ignored");
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

TEST(RendezvousTest, OneRankNeedsNobody) {
  RendezvousConfig c;
  ASSERT_OK_AND_ASSIGN(std::string got, ShareFromRankZero(c, "abc"));
  EXPECT_EQ(got, "abc");
}

TEST(RendezvousTest, TcpThreeRanks) {
  ASSERT_OK_AND_ASSIGN(int port, PickFreePort());
  const std::string id = FakeId(1);
  const auto results =
      RunRanks({Tcp(0, 3, port), Tcp(1, 3, port), Tcp(2, 3, port)}, id);
  for (size_t r = 0; r < results.size(); ++r) {
    ASSERT_THAT(results[r], IsOk()) << "rank " << r;
    EXPECT_EQ(*results[r], id) << "rank " << r;
  }
}

// The others start first and retry until rank 0 listens.
TEST(RendezvousTest, TcpRankZeroLate) {
  ASSERT_OK_AND_ASSIGN(int port, PickFreePort());
  const std::string id = FakeId(2);
  const auto results = RunRanks(
      {Tcp(0, 3, port), Tcp(1, 3, port), Tcp(2, 3, port)}, id,
      {absl::Milliseconds(700), absl::ZeroDuration(), absl::Milliseconds(100)});
  for (size_t r = 0; r < results.size(); ++r) {
    ASSERT_THAT(results[r], IsOk()) << "rank " << r;
    EXPECT_EQ(*results[r], id);
  }
}

// Three ranks linked through the rendezvous's connections.
std::vector<std::unique_ptr<PeerLinks>> LinkThree(int port) {
  std::vector<std::unique_ptr<PeerLinks>> links(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      absl::StatusOr<SharedFromRankZero> got =
          ShareFromRankZeroLinked(Tcp(r, 3, port), r == 0 ? "id" : "");
      ZR_CHECK_OK(got.status());
      ZR_CHECK_EQ(got->payload, "id");
      // One host: every rank learns three ranks share it.
      ZR_CHECK_EQ(got->hosts.size(), 3u);
      ZR_CHECK(!got->hosts[0].empty());
      ZR_CHECK_EQ(RanksOnHostOf(got->hosts, r), 3);
      links[r] = std::move(got->links);
    });
  }
  for (std::thread& t : threads) t.join();
  return links;
}

// Polls `links` until Check fails or 5 s pass.
absl::Status CheckUntilFailed(PeerLinks& links) {
  const absl::Time end = absl::Now() + absl::Seconds(5);
  absl::Status s;
  while ((s = links.Check()).ok() && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  return s;
}

// A rank whose process ends without saying goodbye (killed, crashed, or
// failed) is named by rank 0; rank 0 ending so is named by every other
// rank: the failure reaches the whole job through rank 0.
TEST(PeerLinksTest, AProcessThatEndsWithoutGoodbyeIsNamed) {
  ASSERT_OK_AND_ASSIGN(int port, PickFreePort());
  std::vector<std::unique_ptr<PeerLinks>> links = LinkThree(port);
  for (auto& l : links) ASSERT_NE(l, nullptr);
  for (auto& l : links) EXPECT_THAT(l->Check(), IsOk());
  links[2].reset();  // rank 2's process dies: its socket closes
  EXPECT_THAT(CheckUntilFailed(*links[0]),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("rank 2's process ended without finishing")));
  EXPECT_THAT(links[1]->Check(), IsOk());
  links[0].reset();  // rank 0's watchdog ends it
  EXPECT_THAT(CheckUntilFailed(*links[1]),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("rank 0's process ended without finishing")));
}

// Ranks that end normally say goodbye first: nobody takes that for a
// failure, in either direction.
TEST(PeerLinksTest, GoodbyeIsNotAFailure) {
  ASSERT_OK_AND_ASSIGN(int port, PickFreePort());
  std::vector<std::unique_ptr<PeerLinks>> links = LinkThree(port);
  links[1]->Goodbye();
  links[1].reset();
  links[0]->Goodbye();
  links[0].reset();
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_THAT(links[2]->Check(), IsOk());
  EXPECT_THAT(links[2]->Check(), IsOk());
}

// How many ranks share a rank's host, from the host names exchanged.
TEST(PeerLinksTest, RanksOnHostCountsTheRanksOfEachNode) {
  const std::vector<std::string> hosts = {"a", "a", "b", "a", "b"};
  EXPECT_EQ(RanksOnHostOf(hosts, 0), 3);
  EXPECT_EQ(RanksOnHostOf(hosts, 2), 2);
  EXPECT_EQ(RanksOnHostOf({}, 0), 0);
  EXPECT_EQ(RanksOnHostOf(hosts, 7), 0);
}

// The file rendezvous and a single rank keep no connections.
TEST(PeerLinksTest, NoneWithoutTcp) {
  RendezvousConfig one;
  ASSERT_OK_AND_ASSIGN(SharedFromRankZero alone,
                       ShareFromRankZeroLinked(one, "x"));
  EXPECT_EQ(alone.payload, "x");
  EXPECT_EQ(alone.links, nullptr);
}

TEST(RendezvousTest, TcpHostName) {
  ASSERT_OK_AND_ASSIGN(int port, PickFreePort());
  RendezvousConfig one = Tcp(1, 2, port);
  one.host = "localhost";
  const auto results = RunRanks({Tcp(0, 2, port), one}, FakeId(3));
  ASSERT_THAT(results[1], IsOk());
  EXPECT_EQ(*results[1], FakeId(3));
}

TEST(RendezvousTest, TcpClientTimesOutNamingTheAddress) {
  ASSERT_OK_AND_ASSIGN(int port, PickFreePort());
  const absl::Time start = absl::Now();
  EXPECT_THAT(
      ShareFromRankZero(Tcp(1, 2, port, absl::Milliseconds(600)), ""),
      StatusIs(absl::StatusCode::kDeadlineExceeded,
               AllOf(HasSubstr(absl::StrCat("127.0.0.1:", port)),
                     HasSubstr("rank 1"), HasSubstr("Connection refused"),
                     HasSubstr("MASTER_ADDR"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(RendezvousTest, TcpServerTimesOutNamingTheMissingRanks) {
  ASSERT_OK_AND_ASSIGN(int port, PickFreePort());
  const auto results =
      RunRanks({Tcp(0, 4, port, absl::Seconds(1)), Tcp(1, 4, port),
                Tcp(3, 4, port, absl::Seconds(1))},
               FakeId(4));
  EXPECT_THAT(results[0],
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("rank 2 of 4 never connected"),
                             HasSubstr(absl::StrCat("port ", port)))));
  // The ranks that connected got the id.
  ASSERT_THAT(results[1], IsOk());
  EXPECT_EQ(*results[1], FakeId(4));
}

TEST(RendezvousTest, TcpWorldSizeMismatch) {
  ASSERT_OK_AND_ASSIGN(int port, PickFreePort());
  const auto results =
      RunRanks({Tcp(0, 2, port), Tcp(1, 3, port, absl::Seconds(5))}, "x");
  EXPECT_THAT(results[0], StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("world size 3 but rank 0 "
                                             "with 2")));
  EXPECT_THAT(results[1],
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("refused rank 1"),
                             HasSubstr("world size 3 but rank 0 with 2"))));
}

TEST(RendezvousTest, TcpDuplicateRank) {
  ASSERT_OK_AND_ASSIGN(int port, PickFreePort());
  const auto results = RunRanks(
      {Tcp(0, 3, port), Tcp(1, 3, port), Tcp(1, 3, port)}, "x",
      {absl::ZeroDuration(), absl::ZeroDuration(), absl::Milliseconds(300)});
  EXPECT_THAT(results[0], StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("two processes claim rank 1")));
}

TEST(RendezvousTest, TcpUnresolvableHost) {
  RendezvousConfig c = Tcp(1, 2, 29500, absl::Seconds(5));
  c.host = "no-such-host.invalid";
  EXPECT_THAT(ShareFromRankZero(c, ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot resolve MASTER_ADDR "
                                 "'no-such-host.invalid'")));
}

TEST(RendezvousTest, TcpPortInUse) {
  // Hold a listening socket on the port.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  EXPECT_THAT(ShareFromRankZero(Tcp(0, 2, port, absl::Seconds(1)), "x"),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr(absl::StrCat("port ", port)),
                             HasSubstr("Address already in use"),
                             HasSubstr("choose another MASTER_PORT"))));
  close(fd);
}

// Something that is not rank 0 answers on the port.
TEST(RendezvousTest, TcpStrangerOnThePort) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::thread stranger([fd] {
    const int c = accept(fd, nullptr, nullptr);
    const char reply[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
    (void)!write(c, reply, sizeof(reply) - 1);
    close(c);
  });
  EXPECT_THAT(
      ShareFromRankZero(Tcp(1, 2, ntohs(addr.sin_port), absl::Seconds(5)), ""),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("something other than rank 0")));
  stranger.join();
  close(fd);
}

RendezvousConfig File(int rank, int world, const std::string& path,
                      absl::Duration timeout = absl::Seconds(20)) {
  RendezvousConfig c;
  c.rank = rank;
  c.world_size = world;
  c.file = path;
  c.timeout = timeout;
  return c;
}

TEST(RendezvousTest, FileThreeRanks) {
  const std::string path = TempPath("rendezvous_three");
  const std::string id = FakeId(5);
  // Readers first: they poll until rank 0 has written the file.
  const auto results =
      RunRanks({File(0, 3, path), File(1, 3, path), File(2, 3, path)}, id,
               {absl::Milliseconds(300)});
  for (size_t r = 0; r < results.size(); ++r) {
    ASSERT_THAT(results[r], IsOk()) << "rank " << r;
    EXPECT_EQ(*results[r], id);
  }
  // Rank 0 cleans up once everyone has read it.
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  EXPECT_NE(access((path + ".ack.1").c_str(), F_OK), 0);
  EXPECT_NE(access((path + ".ack.2").c_str(), F_OK), 0);
}

TEST(RendezvousTest, FileReaderTimesOutNamingThePath) {
  const std::string path = TempPath("rendezvous_never");
  EXPECT_THAT(ShareFromRankZero(File(2, 3, path, absl::Milliseconds(300)), ""),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr(path), HasSubstr("rank 2"),
                             HasSubstr("never appeared"))));
}

TEST(RendezvousTest, FileWriterTimesOutNamingTheMissingRanks) {
  const std::string path = TempPath("rendezvous_missing");
  const auto results = RunRanks(
      {File(0, 3, path, absl::Milliseconds(800)), File(1, 3, path)}, "x");
  EXPECT_THAT(results[0], StatusIs(absl::StatusCode::kDeadlineExceeded,
                                   AllOf(HasSubstr("rank 2 of 3 did not "
                                                   "read it"),
                                         HasSubstr(path))));
  EXPECT_THAT(results[1], IsOk());
}

TEST(RendezvousTest, FileOfAnotherJobIsRejected) {
  const std::string path = TempPath("rendezvous_other_job");
  // A job of 2 ranks publishes; a rank of a 3-rank job must not take it.
  std::thread writer([&] {
    (void)ShareFromRankZero(File(0, 2, path, absl::Seconds(1)), "x");
  });
  EXPECT_THAT(ShareFromRankZero(File(1, 3, path, absl::Milliseconds(600)), ""),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("for a job of 2 ranks, this one has 3")));
  writer.join();
}

RendezvousConfig JobFile(int rank, int world, const std::string& path,
                         const std::string& job, absl::Duration timeout) {
  RendezvousConfig c = File(rank, world, path, timeout);
  c.job = job;
  return c;
}

TEST(RendezvousTest, FileLeftByAnEarlierJobOfTheSameSizeIsPassedOver) {
  const std::string path = TempPath("rendezvous_stale");
  // Job A's rank 0 publishes and dies waiting: its file stays.
  EXPECT_THAT(
      ShareFromRankZero(
          JobFile(0, 2, path, "slurm:41", absl::Milliseconds(200)), FakeId(1)),
      StatusIs(absl::StatusCode::kDeadlineExceeded));
  ASSERT_EQ(access(path.c_str(), F_OK), 0);
  // Job B's rank 1 starts first and finds A's file; it waits for B's.
  const std::string id = FakeId(2);
  const auto results =
      RunRanks({JobFile(0, 2, path, "slurm:42", absl::Seconds(20)),
                JobFile(1, 2, path, "slurm:42", absl::Seconds(20))},
               id, {absl::Milliseconds(400)});
  ASSERT_THAT(results[0], IsOk());
  ASSERT_THAT(results[1], IsOk());
  EXPECT_EQ(*results[1], id);
  // Alone, B's rank 1 says whose file it found.
  EXPECT_THAT(
      ShareFromRankZero(
          JobFile(0, 2, path, "slurm:41", absl::Milliseconds(100)), FakeId(1)),
      StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(ShareFromRankZero(
                  JobFile(1, 2, path, "slurm:42", absl::Milliseconds(300)), ""),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("it belongs to job 'slurm:41', this is job "
                                 "'slurm:42'")));
  unlink(path.c_str());
}

TEST(RendezvousTest, AcknowledgementOfAnotherFileIsNotCounted) {
  const std::string path = TempPath("rendezvous_stale_ack");
  // An acknowledgement that appears while rank 0 waits, holding another
  // file's nonce (a rank that read an earlier job's file): not rank 1's
  // acknowledgement of this one.
  std::thread stale([&] {
    absl::SleepFor(absl::Milliseconds(100));
    std::ofstream(path + ".ack.1") << "0123456789abcdef";
  });
  EXPECT_THAT(ShareFromRankZero(File(0, 2, path, absl::Milliseconds(600)), "x"),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("rank 1 of 2 did not read it")));
  stale.join();
  unlink((path + ".ack.1").c_str());
  unlink(path.c_str());
}

TEST(RendezvousTest, FileInMissingDirectory) {
  EXPECT_THAT(
      ShareFromRankZero(File(0, 2, "/nonexistent-dir/zero3.id"), "x"),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("cannot create '/nonexistent-dir/zero3.id.tmp.")));
}

TEST(RendezvousTest, BadConfig) {
  EXPECT_THAT(ShareFromRankZero(Tcp(2, 2, 1000), ""),
              StatusIs(absl::StatusCode::kInvalidArgument));
  RendezvousConfig no_host = Tcp(1, 2, 1000);
  no_host.host.clear();
  EXPECT_THAT(ShareFromRankZero(no_host, ""),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace cuda
}  // namespace zero3
