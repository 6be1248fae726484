// Copyright 2026 The zero3 Authors.
//
// rendezvous.h: rank 0 hands a small blob (the NCCL unique id) to every
// other rank, before any collective exists.
//
// Two transports:
//
//  - TCP. Rank 0 listens on `port` on all interfaces; the others connect to
//    `host`:`port`, retrying while rank 0 is not up yet, until `timeout`.
//    Each connecting rank says who it is (rank, world size); rank 0 checks
//    that every rank 1..n-1 connects exactly once with the same world size,
//    so a misconfigured launch fails here with a message rather than
//    hanging in NCCL's initialization. Rank 0 returns once every rank has
//    its copy, so the exchange is also a barrier with a timeout.
//
//  - A file on a shared file system. Rank 0 removes what an earlier job
//    left there, then writes `file` atomically (a temporary file in the
//    same directory, then rename) with the job's identity and a random
//    nonce; the others poll for it, read it, and acknowledge by writing
//    the nonce to `file`.ack.<rank>; rank 0 waits until every
//    acknowledgement holds its nonce, then removes the file and the
//    acknowledgements. A rank takes only a file of its own job (`job`,
//    where the launcher names the job): one left by a job that died
//    mid-rendezvous is passed over, and an acknowledgement of such a file
//    is not counted. Without a job identity, use a path unique to the job.
//
// Errors name the address or path, the ranks missing, and what to check.
// Thread-safe: each call uses its own sockets and files; tests run several
// ranks as threads of one process.

#ifndef ZERO3_BACKENDS_CUDA_RENDEZVOUS_H_
#define ZERO3_BACKENDS_CUDA_RENDEZVOUS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace zero3 {
namespace cuda {

struct RendezvousConfig {
  int rank = 0;
  int world_size = 1;
  // TCP: rank 0's host as the others reach it, and the port it listens on.
  std::string host;
  int port = 0;
  // File: used instead of TCP when non-empty.
  std::string file;
  // The job's identity as the launcher gives it (RankEnvironment::job), the
  // same on every rank; empty: none known.
  std::string job;
  // How long any rank waits for the others, in total.
  absl::Duration timeout = absl::Seconds(300);
};

// Returns rank 0's `payload` on every rank (on rank 0, `payload` itself;
// other ranks' `payload` is ignored). With one rank, returns at once.
// Payloads up to 1 MiB.
absl::StatusOr<std::string> ShareFromRankZero(const RendezvousConfig& config,
                                              absl::string_view payload);

// The TCP connections of the rendezvous, kept open for the whole job: rank
// 0 holds one to every other rank, each other rank one to rank 0. A process
// that ends closes its side; one that ends normally says goodbye first.
// So rank 0 learns within a poll that another rank's process died (killed,
// crashed, or exited on an error), and every other rank that rank 0's did;
// the watchdog (core/runtime/watchdog.h) probes Check and ends the rank,
// which closes its links in turn: every rank of the job stops within
// seconds, whichever launcher started them. Thread-compatible; Check runs
// on the watchdog's thread, Goodbye on the rank's after its last
// collective.
struct SharedFromRankZero;

class PeerLinks {
 public:
  ~PeerLinks();
  PeerLinks(const PeerLinks&) = delete;
  PeerLinks& operator=(const PeerLinks&) = delete;

  // OK while every linked process lives or has said goodbye; Unavailable
  // naming the rank whose process ended without it. Does not block.
  absl::Status Check();
  // Tells the linked ranks this one ends normally, and closes the links.
  void Goodbye();

 private:
  friend absl::StatusOr<SharedFromRankZero> ShareFromRankZeroLinked(
      const RendezvousConfig&, absl::string_view);
  PeerLinks(int rank, std::vector<int> peer_ranks, std::vector<int> fds);
  const int rank_;
  std::vector<int> peer_ranks_;  // the rank at the other end of each link
  std::vector<int> fds_;         // -1 once closed
};

struct SharedFromRankZero {
  std::string payload;
  // Null with one rank or the file rendezvous (no connections to keep).
  std::unique_ptr<PeerLinks> links;
  // Each rank's host name (gethostname), by rank, exchanged over the links;
  // empty without them.
  std::vector<std::string> hosts;
};

// How many ranks run on `rank`'s host (`hosts` as exchanged); 0 when
// `hosts` is empty.
int RanksOnHostOf(const std::vector<std::string>& hosts, int rank);

// ShareFromRankZero that keeps the TCP connections as PeerLinks, and then
// exchanges the ranks' host names over them (every rank learns every
// rank's host, so how many share its node).
absl::StatusOr<SharedFromRankZero> ShareFromRankZeroLinked(
    const RendezvousConfig& config, absl::string_view payload);

// A TCP port that was free on this host a moment ago (bound to port 0 and
// released), for launchers and tests that need a MASTER_PORT. Another
// process may take it before it is used; launchers on shared hosts accept
// that small risk, as torchrun does.
absl::StatusOr<int> PickFreePort();

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_RENDEZVOUS_H_
