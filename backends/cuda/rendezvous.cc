// Copyright 2026 The zero3 Authors.

#include "backends/cuda/rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cuda {
namespace {

// Both directions of the TCP exchange and the file start with this: it
// tells a zero3 peer from anything else listening on or connecting to the
// port, and changes if the format ever does.
constexpr char kMagic[8] = {'Z', 'R', '3', 'R', 'D', 'V', '0', '1'};
constexpr int64_t kMaxPayload = int64_t{1} << 20;
// A connection that does not say who it is within this time is dropped, so
// a stray client cannot hold up the rendezvous.
constexpr absl::Duration kHelloTimeout = absl::Seconds(10);
// One connection attempt waits at most this long before the next try.
constexpr absl::Duration kConnectAttemptTimeout = absl::Seconds(5);

std::string ErrnoText(int error) {
  char buffer[256];
  // GNU strerror_r: returns a pointer to the message (maybe not `buffer`).
  return std::string(strerror_r(error, buffer, sizeof(buffer)));
}

std::string Seconds(absl::Duration d) {
  return absl::StrFormat("%.3g s", absl::ToDoubleSeconds(d));
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) close(fd_);
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives the descriptor up (the caller closes it).
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

int RemainingMillis(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(
      std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
}

// Waits until `fd` has `events` or `deadline` passes.
absl::Status WaitFor(int fd, short events, absl::Time deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, RemainingMillis(deadline));
    if (n > 0) return absl::OkStatus();
    if (n == 0) return absl::DeadlineExceededError("timed out");
    if (errno != EINTR) return absl::UnavailableError(ErrnoText(errno));
  }
}

absl::Status WriteAll(int fd, const void* data, size_t size,
                      absl::Time deadline) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      absl::Status s = WaitFor(fd, POLLOUT, deadline);
      if (!s.ok()) return s;
      continue;
    }
    return absl::UnavailableError(ErrnoText(errno));
  }
  return absl::OkStatus();
}

absl::Status ReadAll(int fd, void* data, size_t size, absl::Time deadline) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = recv(fd, p, size, 0);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return absl::UnavailableError("connection closed by the peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      absl::Status s = WaitFor(fd, POLLIN, deadline);
      if (!s.ok()) return s;
      continue;
    }
    return absl::UnavailableError(ErrnoText(errno));
  }
  return absl::OkStatus();
}

void PutU32(std::string* out, uint32_t v) {
  const uint32_t be = htonl(v);
  out->append(reinterpret_cast<const char*>(&be), 4);
}

uint32_t GetU32(const char* p) {
  uint32_t be;
  std::memcpy(&be, p, 4);
  return ntohl(be);
}

std::string RankList(const std::vector<bool>& present) {
  std::vector<int> missing;
  for (int r = 0; r < static_cast<int>(present.size()); ++r) {
    if (!present[r]) missing.push_back(r);
  }
  return absl::StrCat(missing.size() == 1 ? "rank " : "ranks ",
                      absl::StrJoin(missing, ", "));
}

// ---------------------------------------------------------------------------
// TCP

// Reply: magic, status byte (0 = ok), length, payload or error text.
std::string Reply(bool ok, absl::string_view body) {
  std::string out(kMagic, sizeof(kMagic));
  out.push_back(ok ? 0 : 1);
  PutU32(&out, static_cast<uint32_t>(body.size()));
  out.append(body.data(), body.size());
  return out;
}

absl::StatusOr<Fd> Listen(int port) {
  // One IPv6 socket accepting IPv4 too where the host has IPv6; IPv4 alone
  // otherwise.
  Fd fd(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  int bind_error = 0;
  const int one = 1;
  if (fd.valid()) {
    const int zero = 0;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(static_cast<uint16_t>(port));
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      if (listen(fd.get(), 128) == 0) return fd;
    }
    bind_error = errno;
  }
  if (bind_error != EADDRINUSE) {
    fd = Fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) {
      return absl::UnavailableError(
          absl::StrCat("cannot create a socket: ", ErrnoText(errno)));
    }
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        listen(fd.get(), 128) == 0) {
      return fd;
    }
    bind_error = errno;
  }
  return absl::UnavailableError(absl::StrCat(
      "rank 0 cannot listen on TCP port ", port,
      " (MASTER_PORT) for the rendezvous: ", ErrnoText(bind_error),
      bind_error == EADDRINUSE
          ? "; another job on this host may be using the port: choose "
            "another MASTER_PORT"
          : ""));
}

// Rank 0's side: `kept`, when given, receives the connection of each rank
// (index = rank; rank 0's stays invalid).
absl::StatusOr<std::string> ServeTcp(const RendezvousConfig& config,
                                     absl::string_view payload,
                                     absl::Time deadline,
                                     std::vector<Fd>* kept = nullptr) {
  absl::StatusOr<Fd> listener = Listen(config.port);
  if (!listener.ok()) return listener.status();
  const std::string ok_reply = Reply(true, payload);
  std::vector<bool> joined(config.world_size, false);
  joined[0] = true;
  int missing = config.world_size - 1;
  while (missing > 0) {
    absl::Status ready = WaitFor(listener->get(), POLLIN, deadline);
    if (absl::IsDeadlineExceeded(ready)) {
      return absl::DeadlineExceededError(absl::StrCat(
          "rendezvous: rank 0 listened on port ", config.port, " for ",
          Seconds(config.timeout), " but ", RankList(joined), " of ",
          config.world_size,
          " never connected; check that every rank was started, with the "
          "same MASTER_ADDR (",
          config.host, ") and MASTER_PORT (", config.port,
          "), and can reach this host (firewall?)"));
    }
    if (!ready.ok()) return ready;
    Fd conn(accept4(listener->get(), nullptr, nullptr,
                    SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn.valid()) continue;  // EAGAIN, ECONNABORTED, EINTR: try again
    const absl::Time hello_deadline =
        std::min(deadline, absl::Now() + kHelloTimeout);
    char hello[sizeof(kMagic) + 8];
    if (!ReadAll(conn.get(), hello, sizeof(hello), hello_deadline).ok() ||
        std::memcmp(hello, kMagic, sizeof(kMagic)) != 0) {
      continue;  // not one of ours, or gone: ignore it
    }
    const int rank = static_cast<int>(GetU32(hello + sizeof(kMagic)));
    const int world = static_cast<int>(GetU32(hello + sizeof(kMagic) + 4));
    std::string problem;
    if (world != config.world_size) {
      problem = absl::StrCat("rank ", rank, " was started with world size ",
                             world, " but rank 0 with ", config.world_size,
                             "; every rank must see the same WORLD_SIZE");
    } else if (rank < 1 || rank >= config.world_size) {
      problem = absl::StrCat("a process connected as rank ", rank,
                             ", outside 1..", config.world_size - 1);
    } else if (joined[rank]) {
      problem = absl::StrCat(
          "two processes claim rank ", rank,
          "; each process needs its own rank (check how RANK is set)");
    }
    if (!problem.empty()) {
      (void)WriteAll(conn.get(), Reply(false, problem).data(),
                     Reply(false, problem).size(), hello_deadline);
      return absl::InvalidArgumentError(
          absl::StrCat("rendezvous on port ", config.port, ": ", problem));
    }
    if (WriteAll(conn.get(), ok_reply.data(), ok_reply.size(), deadline).ok()) {
      joined[rank] = true;
      --missing;
      if (kept != nullptr) {
        kept->resize(config.world_size);
        (*kept)[rank] = std::move(conn);
      }
    }
  }
  return std::string(payload);
}

// One attempt: connect to one of `addresses`, say who we are, read the
// reply. Unavailable for errors worth retrying (refused, reset, timed out);
// other codes are final.
absl::StatusOr<std::string> FetchOnce(const RendezvousConfig& config,
                                      const addrinfo* addresses,
                                      absl::Time deadline, Fd* kept) {
  std::string last_error = "no address";
  for (const addrinfo* ai = addresses; ai != nullptr; ai = ai->ai_next) {
    Fd fd(socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                 ai->ai_protocol));
    if (!fd.valid()) {
      last_error = ErrnoText(errno);
      continue;
    }
    const absl::Time attempt_deadline =
        std::min(deadline, absl::Now() + kConnectAttemptTimeout);
    if (connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_error = ErrnoText(errno);
        continue;
      }
      absl::Status s = WaitFor(fd.get(), POLLOUT, attempt_deadline);
      if (!s.ok()) {
        last_error = absl::StrCat("connect: ", s.message());
        continue;
      }
      int error = 0;
      socklen_t len = sizeof(error);
      getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len);
      if (error != 0) {
        last_error = ErrnoText(error);
        continue;
      }
    }
    const int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::string hello(kMagic, sizeof(kMagic));
    PutU32(&hello, static_cast<uint32_t>(config.rank));
    PutU32(&hello, static_cast<uint32_t>(config.world_size));
    absl::Status s = WriteAll(fd.get(), hello.data(), hello.size(), deadline);
    char header[sizeof(kMagic) + 5];
    if (s.ok()) s = ReadAll(fd.get(), header, sizeof(header), deadline);
    if (!s.ok()) {
      last_error = std::string(s.message());
      continue;
    }
    if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "something other than rank 0 of this job answers at ", config.host,
          ":", config.port, "; check MASTER_ADDR and MASTER_PORT"));
    }
    const bool ok = header[sizeof(kMagic)] == 0;
    const uint32_t size = GetU32(header + sizeof(kMagic) + 1);
    if (size > kMaxPayload) {
      return absl::FailedPreconditionError(
          absl::StrCat("rank 0 at ", config.host, ":", config.port,
                       " sent a reply of ", size, " bytes"));
    }
    std::string body(size, '\0');
    s = ReadAll(fd.get(), body.data(), size, deadline);
    if (!s.ok()) {
      last_error = std::string(s.message());
      continue;
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank 0 at ", config.host, ":", config.port,
                       " refused rank ", config.rank, ": ", body));
    }
    if (kept != nullptr) *kept = std::move(fd);
    return body;
  }
  return absl::UnavailableError(last_error);
}

absl::StatusOr<std::string> FetchTcp(const RendezvousConfig& config,
                                     absl::Time deadline, Fd* kept = nullptr) {
  const std::string where = absl::StrCat(config.host, ":", config.port);
  const std::string port = absl::StrCat(config.port);
  absl::Duration backoff = absl::Milliseconds(50);
  std::string last_error;
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* addresses = nullptr;
    const int gai =
        getaddrinfo(config.host.c_str(), port.c_str(), &hints, &addresses);
    if (gai == 0) {
      absl::StatusOr<std::string> got =
          FetchOnce(config, addresses, deadline, kept);
      freeaddrinfo(addresses);
      if (got.ok() || !absl::IsUnavailable(got.status())) return got;
      last_error = std::string(got.status().message());
    } else if (gai == EAI_AGAIN) {
      last_error = gai_strerror(gai);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "rendezvous: cannot resolve MASTER_ADDR '", config.host,
          "': ", gai == EAI_SYSTEM ? ErrnoText(errno) : gai_strerror(gai)));
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    absl::SleepFor(std::min(backoff, left));
    backoff = std::min(backoff * 2, absl::Seconds(1));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "rendezvous: rank ", config.rank,
      " could not get the NCCL id from rank "
      "0 at ",
      where, " (MASTER_ADDR:MASTER_PORT) within ", Seconds(config.timeout),
      "; last error: ", last_error,
      ". Check that rank 0 is running and that MASTER_ADDR is its address as "
      "seen from this host"));
}

// ---------------------------------------------------------------------------
// File

std::string AckPath(const std::string& file, int rank) {
  return absl::StrCat(file, ".ack.", rank);
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& content) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  Fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("rendezvous: rank 0 cannot create '", tmp,
                     "' (ZERO3_RENDEZVOUS_FILE): ", ErrnoText(errno)));
  }
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n =
        write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      unlink(tmp.c_str());
      return absl::FailedPreconditionError(absl::StrCat(
          "rendezvous: cannot write '", tmp, "': ", ErrnoText(error)));
    }
    done += static_cast<size_t>(n);
  }
  // The others may read it from another node: make it durable before it
  // appears under its name.
  fsync(fd.get());
  fd = Fd();
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    unlink(tmp.c_str());
    return absl::FailedPreconditionError(
        absl::StrCat("rendezvous: cannot rename '", tmp, "' to '", path,
                     "': ", ErrnoText(error)));
  }
  return absl::OkStatus();
}

// The file's layout: kFileMagic, world size, the job's identity and a
// nonce rank 0 draws, then the payload (sizes as little-endian u32).
constexpr char kFileMagic[8] = {'Z', 'R', '3', 'R', 'D', 'V', 'F', '2'};
constexpr size_t kNonceBytes = 16;

std::string NewNonce() {
  std::random_device device;
  std::string nonce(kNonceBytes, '\0');
  for (char& c : nonce) c = static_cast<char>(device() & 0xFF);
  return nonce;
}

// The whole content of `path`, or nullopt where it cannot be opened.
std::optional<std::string> ReadWhole(const std::string& path) {
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  std::string content;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd.get(), buffer, sizeof(buffer))) > 0 ||
         (n < 0 && errno == EINTR)) {
    if (n > 0) content.append(buffer, static_cast<size_t>(n));
  }
  return content;
}

absl::StatusOr<std::string> PublishFile(const RendezvousConfig& config,
                                        absl::string_view payload,
                                        absl::Time deadline) {
  // What an earlier job left: its file first, so that no rank of this job
  // reads it once its acknowledgements are gone.
  unlink(config.file.c_str());
  for (int r = 1; r < config.world_size; ++r) {
    unlink(AckPath(config.file, r).c_str());
  }
  const std::string nonce = NewNonce();
  std::string content(kFileMagic, sizeof(kFileMagic));
  PutU32(&content, static_cast<uint32_t>(config.world_size));
  PutU32(&content, static_cast<uint32_t>(config.job.size()));
  PutU32(&content, static_cast<uint32_t>(payload.size()));
  content += nonce;
  content += config.job;
  content.append(payload.data(), payload.size());
  absl::Status written = WriteFileAtomically(config.file, content);
  if (!written.ok()) return written;

  // An acknowledgement counts only if it holds this file's nonce.
  std::vector<bool> acked(config.world_size, false);
  acked[0] = true;
  int missing = config.world_size - 1;
  while (missing > 0) {
    for (int r = 1; r < config.world_size; ++r) {
      if (!acked[r] && ReadWhole(AckPath(config.file, r)) == nonce) {
        acked[r] = true;
        --missing;
      }
    }
    if (missing == 0) break;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "rendezvous: rank 0 wrote '", config.file, "' but ", RankList(acked),
          " of ", config.world_size, " did not read it within ",
          Seconds(config.timeout),
          "; check that every rank was started with the same "
          "ZERO3_RENDEZVOUS_FILE, on a file system all nodes share"));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  for (int r = 1; r < config.world_size; ++r) {
    unlink(AckPath(config.file, r).c_str());
  }
  unlink(config.file.c_str());
  return std::string(payload);
}

// A published file's payload and nonce for this rank's job, or why the
// file is not that.
struct Published {
  std::string payload, nonce, problem;
};

Published ParsePublished(const RendezvousConfig& config,
                         const std::string& content) {
  constexpr size_t kHeader = sizeof(kFileMagic) + 12 + kNonceBytes;
  Published p;
  if (content.size() < kHeader ||
      std::memcmp(content.data(), kFileMagic, sizeof(kFileMagic)) != 0) {
    p.problem = "it is not a zero3 rendezvous file";
    return p;
  }
  const int world = static_cast<int>(GetU32(content.data() + 8));
  const uint64_t job_size = GetU32(content.data() + 12);
  const uint64_t size = GetU32(content.data() + 16);
  if (content.size() != kHeader + job_size + size) {
    p.problem = "it is truncated";
    return p;
  }
  const std::string job = content.substr(kHeader, job_size);
  if (world != config.world_size) {
    p.problem =
        absl::StrCat("it is for a job of ", world, " ranks, this one has ",
                     config.world_size,
                     " (left by another job? use a path unique to the job)");
  } else if (!config.job.empty() && job != config.job) {
    p.problem = absl::StrCat("it belongs to job '", job, "', this is job '",
                             config.job, "' (left by an earlier job)");
  } else {
    p.nonce = content.substr(kHeader - kNonceBytes, kNonceBytes);
    p.payload = content.substr(kHeader + job_size);
  }
  return p;
}

absl::StatusOr<std::string> ReadPublishedFile(const RendezvousConfig& config,
                                              absl::Time deadline) {
  std::string problem;  // why the last file found was not accepted
  for (;;) {
    if (std::optional<std::string> content = ReadWhole(config.file)) {
      Published p = ParsePublished(config, *content);
      problem = p.problem;
      if (problem.empty()) {
        const std::string ack = AckPath(config.file, config.rank);
        Fd fd(
            open(ack.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
        if (!fd.valid() || write(fd.get(), p.nonce.data(), p.nonce.size()) !=
                               static_cast<ssize_t>(p.nonce.size())) {
          return absl::FailedPreconditionError(
              absl::StrCat("rendezvous: rank ", config.rank, " cannot write '",
                           ack, "': ", ErrnoText(errno)));
        }
        return std::move(p.payload);
      }
    }
    if (absl::Now() >= deadline) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "rendezvous: rank ", config.rank, " waited ", Seconds(config.timeout),
      " for rank 0 to write '", config.file, "' (ZERO3_RENDEZVOUS_FILE)",
      problem.empty()
          ? "; it never appeared"
          : absl::StrCat("; the file found there was rejected: ", problem),
      ". Check that rank 0 is running with the same path, on a file system "
      "all nodes share"));
}

// This host's name, or "" where it has none.
std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// A length-prefixed string on `fd`.
absl::Status WriteName(int fd, absl::string_view name, absl::Time deadline) {
  std::string out;
  PutU32(&out, static_cast<uint32_t>(name.size()));
  out.append(name.data(), name.size());
  return WriteAll(fd, out.data(), out.size(), deadline);
}

absl::StatusOr<std::string> ReadName(int fd, absl::Time deadline) {
  char size[4];
  ZR_RETURN_IF_ERROR(ReadAll(fd, size, sizeof(size), deadline));
  const uint32_t n = GetU32(size);
  if (n > 255) return absl::DataLossError("host name over 255 bytes");
  std::string name(n, '\0');
  ZR_RETURN_IF_ERROR(ReadAll(fd, name.data(), n, deadline));
  return name;
}

// After the rendezvous, over its kept connections (`fds`: rank 0's to
// ranks 1.., the others' to rank 0): every rank sends rank 0 its host name,
// and rank 0 sends every rank all of them, by rank.
absl::StatusOr<std::vector<std::string>> ExchangeHosts(
    const RendezvousConfig& config, const std::vector<int>& fds,
    absl::Time deadline) {
  const auto failed = [&](const absl::Status& s) {
    return absl::UnavailableError(
        absl::StrCat("rendezvous: exchanging host names (rank ", config.rank,
                     "): ", s.message()));
  };
  std::vector<std::string> hosts(config.world_size);
  if (config.rank != 0) {
    absl::Status s = WriteName(fds[0], HostName(), deadline);
    for (int r = 0; s.ok() && r < config.world_size; ++r) {
      absl::StatusOr<std::string> name = ReadName(fds[0], deadline);
      if (!name.ok()) return failed(name.status());
      hosts[r] = std::move(*name);
    }
    if (!s.ok()) return failed(s);
    return hosts;
  }
  hosts[0] = HostName();
  for (int r = 1; r < config.world_size; ++r) {
    absl::StatusOr<std::string> name = ReadName(fds[r - 1], deadline);
    if (!name.ok()) return failed(name.status());
    hosts[r] = std::move(*name);
  }
  for (int r = 1; r < config.world_size; ++r) {
    for (const std::string& h : hosts) {
      const absl::Status s = WriteName(fds[r - 1], h, deadline);
      if (!s.ok()) return failed(s);
    }
  }
  return hosts;
}

// The rank and, on rank 0, the payload, checked (any transport).
absl::Status CheckRankAndPayload(const RendezvousConfig& config,
                                 absl::string_view payload) {
  if (config.world_size < 1 || config.rank < 0 ||
      config.rank >= config.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rendezvous: rank ", config.rank, " of ", config.world_size));
  }
  if (config.rank == 0 && static_cast<int64_t>(payload.size()) > kMaxPayload) {
    return absl::InvalidArgumentError("rendezvous payload over 1 MiB");
  }
  return absl::OkStatus();
}

// The TCP transport's address, checked.
absl::Status CheckTcpAddress(const RendezvousConfig& config) {
  if (config.port < 1 || config.port > 65535 ||
      (config.rank != 0 && config.host.empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous: need rank 0's host and a TCP port, got '",
                     config.host, "' port ", config.port));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ShareFromRankZero(const RendezvousConfig& config,
                                              absl::string_view payload) {
  ZR_RETURN_IF_ERROR(CheckRankAndPayload(
      config, config.world_size == 1 ? absl::string_view() : payload));
  if (config.world_size == 1) return std::string(payload);
  const absl::Time deadline = absl::Now() + config.timeout;
  if (!config.file.empty()) {
    return config.rank == 0 ? PublishFile(config, payload, deadline)
                            : ReadPublishedFile(config, deadline);
  }
  ZR_RETURN_IF_ERROR(CheckTcpAddress(config));
  return config.rank == 0 ? ServeTcp(config, payload, deadline)
                          : FetchTcp(config, deadline);
}

absl::StatusOr<SharedFromRankZero> ShareFromRankZeroLinked(
    const RendezvousConfig& config, absl::string_view payload) {
  SharedFromRankZero out;
  if (config.world_size == 1 || !config.file.empty()) {
    ZR_ASSIGN_OR_RETURN(out.payload, ShareFromRankZero(config, payload));
    return out;
  }
  ZR_RETURN_IF_ERROR(CheckRankAndPayload(config, payload));
  ZR_RETURN_IF_ERROR(CheckTcpAddress(config));
  const absl::Time deadline = absl::Now() + config.timeout;
  std::vector<int> ranks, fds;
  if (config.rank == 0) {
    std::vector<Fd> kept;
    ZR_ASSIGN_OR_RETURN(out.payload,
                        ServeTcp(config, payload, deadline, &kept));
    for (int r = 1; r < static_cast<int>(kept.size()); ++r) {
      ranks.push_back(r);
      fds.push_back(kept[r].release());
    }
  } else {
    Fd kept;
    ZR_ASSIGN_OR_RETURN(out.payload, FetchTcp(config, deadline, &kept));
    ranks.push_back(0);
    fds.push_back(kept.release());
  }
  out.links.reset(new PeerLinks(config.rank, std::move(ranks), std::move(fds)));
  ZR_ASSIGN_OR_RETURN(out.hosts,
                      ExchangeHosts(config, out.links->fds_, deadline));
  return out;
}

int RanksOnHostOf(const std::vector<std::string>& hosts, int rank) {
  if (rank < 0 || rank >= static_cast<int>(hosts.size())) return 0;
  return static_cast<int>(std::count(hosts.begin(), hosts.end(), hosts[rank]));
}

PeerLinks::PeerLinks(int rank, std::vector<int> peer_ranks,
                     std::vector<int> fds)
    : rank_(rank), peer_ranks_(std::move(peer_ranks)), fds_(std::move(fds)) {}

PeerLinks::~PeerLinks() {
  for (int& fd : fds_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

// A goodbye is this byte; anything else on a link is ignored.
constexpr char kGoodbye = 'B';

absl::Status PeerLinks::Check() {
  for (size_t i = 0; i < fds_.size(); ++i) {
    if (fds_[i] < 0) continue;
    char buf[64];
    const ssize_t n = recv(fds_[i], buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      continue;  // alive, nothing said
    }
    if (n > 0 &&
        std::memchr(buf, kGoodbye, static_cast<size_t>(n)) == nullptr) {
      continue;
    }
    close(fds_[i]);
    fds_[i] = -1;
    if (n > 0) continue;  // goodbye: it ended normally
    const int peer = peer_ranks_[i];
    return absl::UnavailableError(absl::StrCat(
        "rank ", peer, "'s process ended without finishing (its connection ",
        peer == 0 ? "from" : "to", " rank 0 ",
        n == 0 ? "closed" : absl::StrCat("failed: ", ErrnoText(errno)),
        peer == 0 ? "; rank 0 stops when any rank does"
                  : "; look for its error or its exit status",
        ")"));
  }
  return absl::OkStatus();
}

void PeerLinks::Goodbye() {
  for (int& fd : fds_) {
    if (fd < 0) continue;
    (void)send(fd, &kGoodbye, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
    fd = -1;
  }
}

absl::StatusOr<int> PickFreePort() {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return absl::UnavailableError(
        absl::StrCat("cannot create a socket: ", ErrnoText(errno)));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot pick a free TCP port: ", ErrnoText(errno)));
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

}  // namespace cuda
}  // namespace zero3
