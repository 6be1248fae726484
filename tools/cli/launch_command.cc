// Copyright 2026 The zero3 Authors.

#include "tools/cli/launch_command.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/util/cpu_binding.h"
#include "tools/cli/internal/launcher_factory.h"

extern char** environ;

namespace zero3 {
namespace cli {
namespace {

// A line longer than this is passed on in pieces.
constexpr size_t kMaxLine = 64 * 1024;
// How often the launcher looks at its ranks when nothing else wakes it.
constexpr int kPollMillis = 100;

std::string ErrnoText(int error) {
  char buffer[256];
  return std::string(strerror_r(error, buffer, sizeof(buffer)));
}

std::string SignalName(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGKILL:
      return "SIGKILL";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGQUIT:
      return "SIGQUIT";
    default:
      return absl::StrCat("signal ", sig);
  }
}

// ---------------------------------------------------------------------------
// Signals reach the main loop through a pipe: the handler only writes the
// signal number to it (async-signal-safe), and the loop polls the pipe with
// the ranks' output.

std::atomic<int> signal_pipe_write{-1};
std::atomic<bool> launch_active{false};

void OnSignal(int sig) {
  const int saved = errno;
  const int fd = signal_pipe_write.load();
  if (fd >= 0) {
    const unsigned char byte = static_cast<unsigned char>(sig);
    (void)!write(fd, &byte, 1);
  }
  errno = saved;
}

class SignalRouting {
 public:
  // Routes SIGINT, SIGTERM, SIGHUP and SIGCHLD to `write_fd` until
  // destroyed, then restores the previous handlers.
  explicit SignalRouting(int write_fd) {
    signal_pipe_write.store(write_fd);
    struct sigaction action {};
    action.sa_handler = OnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (size_t i = 0; i < kSignals.size(); ++i) {
      sigaction(kSignals[i], &action, &previous_[i]);
    }
  }
  ~SignalRouting() {
    for (size_t i = 0; i < kSignals.size(); ++i) {
      sigaction(kSignals[i], &previous_[i], nullptr);
    }
    signal_pipe_write.store(-1);
  }
  SignalRouting(const SignalRouting&) = delete;
  SignalRouting& operator=(const SignalRouting&) = delete;

 private:
  static constexpr std::array<int, 4> kSignals = {SIGINT, SIGTERM, SIGHUP,
                                                  SIGCHLD};
  struct sigaction previous_[4];
};

// ---------------------------------------------------------------------------

struct Pipe {
  int read = -1;
  int write = -1;
};

absl::StatusOr<Pipe> MakePipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(
        absl::StrCat("zero3 launch: pipe: ", ErrnoText(errno)));
  }
  return Pipe{fds[0], fds[1]};
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// The path execve gets: argv[0] itself when it names a path, else the
// first match in PATH (or argv[0], for execve to report ENOENT).
std::string ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    const std::string candidate =
        absl::StrCat(dir.empty() ? "." : dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return name;
}

// The launcher's environment with the variables of local rank `local` set.
std::vector<std::string> RankEnvironment(const LaunchOptions& o, int local,
                                         int port) {
  const std::vector<std::pair<std::string, std::string>> vars = {
      {"RANK", absl::StrCat(o.node_rank * o.nprocs + local)},
      {"LOCAL_RANK", absl::StrCat(local)},
      {"WORLD_SIZE", absl::StrCat(o.nnodes * o.nprocs)},
      {"LOCAL_WORLD_SIZE", absl::StrCat(o.nprocs)},
      {"GROUP_RANK", absl::StrCat(o.node_rank)},
      {"MASTER_ADDR", o.master_addr},
      {"MASTER_PORT", absl::StrCat(port)},
  };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const absl::string_view entry(*e);
    bool replaced = false;
    for (const auto& [name, value] : vars) {
      if (absl::StartsWith(entry, absl::StrCat(name, "="))) replaced = true;
    }
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& [name, value] : vars) {
    env.push_back(absl::StrCat(name, "=", value));
  }
  return env;
}

struct Child {
  RankExit exit;
  int out_fd = -1;
  int err_fd = -1;
  std::string out_partial;
  std::string err_partial;
  std::deque<std::string> err_tail;
  bool reaped = false;
};

class Supervisor {
 public:
  Supervisor(const LaunchOptions& options, std::ostream& out, std::ostream& err)
      : options_(options), out_(out), err_(err) {}

  // Starts the ranks, in order; on failure the ranks already started keep
  // running (Stop, then Run, to end them).
  absl::Status Start(int port);
  // Sends SIGTERM to every rank, SIGKILL after the grace period.
  void Stop();
  // Runs until every rank has exited; fills result_.
  void Run(int signal_fd);
  LaunchResult TakeResult();

 private:
  void Emit(Child& c, bool is_err, absl::string_view data, bool final);
  void ReadFrom(Child& c, bool is_err);
  void Reap();
  void SignalAll(int sig);
  void OnLauncherSignal(int sig);
  bool AllReaped() const;

  const LaunchOptions& options_;
  std::ostream& out_;
  std::ostream& err_;
  std::vector<Child> children_;
  LaunchResult result_;
  // Once set, ranks still alive are killed at this time.
  absl::Time kill_at_ = absl::InfiniteFuture();
  bool killed_ = false;
};

absl::Status Supervisor::Start(int port) {
  const std::string program = ResolveProgram(options_.argv[0]);
  std::vector<std::string> args = options_.argv;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  children_.reserve(options_.nprocs);
  std::vector<cpu_set_t> cpu_sets;
  if (options_.bind_cpus) {
    // Local rank r drives GPU r: its share comes from that GPU's NUMA node
    // where sysfs says which.
    std::vector<std::string> gpus = internal::GpuBusIds();
    gpus.resize(std::min<size_t>(gpus.size(), options_.nprocs));
    std::vector<int> nodes = PciNumaNodes(gpus);
    nodes.resize(options_.nprocs, -1);
    const std::vector<std::vector<int>> slices =
        NumaCpuSlices(AllowedCpus(), nodes);
    if (slices.empty()) {
      err_ << "zero3 launch: fewer cores than processes; not binding them to "
              "CPUs\n";
    }
    for (size_t r = 0; r < slices.size(); ++r) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int cpu : slices[r]) CPU_SET(cpu, &set);
      cpu_sets.push_back(set);
      err_ << "zero3 launch: rank " << r << " on CPUs "
           << CpuListText(slices[r])
           << (nodes[r] >= 0
                   ? absl::StrCat(" (NUMA node ", nodes[r], ", GPU ", r, "'s)")
                   : std::string())
           << "\n";
    }
    err_.flush();
  }
  for (int r = 0; r < options_.nprocs; ++r) {
    std::vector<std::string> env = RankEnvironment(options_, r, port);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    absl::StatusOr<Pipe> out = MakePipe();
    absl::StatusOr<Pipe> err = MakePipe();
    absl::StatusOr<Pipe> exec_error = MakePipe();
    if (!out.ok()) return out.status();
    if (!err.ok()) return err.status();
    if (!exec_error.ok()) return exec_error.status();

    // Signals stay blocked from here until the child has reset its
    // handlers: a signal in between must not run the launcher's handler in
    // the child.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    const pid_t pid = fork();
    if (pid != 0) pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (pid < 0) {
      const int error = errno;
      for (Pipe* p : {&*out, &*err, &*exec_error}) {
        CloseFd(p->read);
        CloseFd(p->write);
      }
      return absl::InternalError(absl::StrCat(
          "zero3 launch: cannot start rank ", r, ": fork: ", ErrnoText(error)));
    }
    if (pid == 0) {
      // The child: async-signal-safe calls only until execve.
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (!cpu_sets.empty()) {
        sched_setaffinity(0, sizeof(cpu_set_t), &cpu_sets[r]);
      }
      if (getppid() != parent) _exit(1);  // the launcher is already gone
      struct sigaction default_action {};
      default_action.sa_handler = SIG_DFL;
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) {
        sigaction(sig, &default_action, nullptr);
      }
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      const int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, STDIN_FILENO);
      dup2(out->write, STDOUT_FILENO);
      dup2(err->write, STDERR_FILENO);
      execve(program.c_str(), argv.data(), envp.data());
      const int error = errno;
      (void)!write(exec_error->write, &error, sizeof(error));
      _exit(127);
    }
    // Also here, so that the group exists before the first signal.
    setpgid(pid, pid);
    children_.emplace_back();
    Child& c = children_.back();
    c.exit.rank = options_.node_rank * options_.nprocs + r;
    c.exit.pid = pid;
    CloseFd(out->write);
    CloseFd(err->write);
    CloseFd(exec_error->write);
    c.out_fd = out->read;
    c.err_fd = err->read;
    fcntl(c.out_fd, F_SETFL, O_NONBLOCK);
    fcntl(c.err_fd, F_SETFL, O_NONBLOCK);
    int exec_errno = 0;
    ssize_t n;
    do {
      n = read(exec_error->read, &exec_errno, sizeof(exec_errno));
    } while (n < 0 && errno == EINTR);
    CloseFd(exec_error->read);
    if (n == sizeof(exec_errno)) {
      c.exit.start_error =
          absl::StrCat("cannot run '", program, "': ", ErrnoText(exec_errno));
    }
  }
  return absl::OkStatus();
}

void Supervisor::Emit(Child& c, bool is_err, absl::string_view data,
                      bool final) {
  std::string& partial = is_err ? c.err_partial : c.out_partial;
  std::ostream& os = is_err ? err_ : out_;
  partial.append(data.data(), data.size());
  const std::string prefix =
      options_.prefix_output ? absl::StrCat("[rank ", c.exit.rank, "] ") : "";
  size_t start = 0;
  for (;;) {
    const size_t newline = partial.find('\n', start);
    size_t end;
    if (newline != std::string::npos) {
      end = newline;
    } else if (partial.size() - start >= kMaxLine ||
               (final && partial.size() > start)) {
      end = partial.size();
    } else {
      break;
    }
    const absl::string_view line(partial.data() + start, end - start);
    os << prefix << line << '\n';
    if (is_err && options_.tail_lines > 0) {
      c.err_tail.emplace_back(line);
      while (static_cast<int>(c.err_tail.size()) > options_.tail_lines) {
        c.err_tail.pop_front();
      }
    }
    start = newline != std::string::npos ? newline + 1 : end;
  }
  partial.erase(0, start);
  os.flush();
}

void Supervisor::ReadFrom(Child& c, bool is_err) {
  int& fd = is_err ? c.err_fd : c.out_fd;
  char buffer[16384];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      Emit(c, is_err, absl::string_view(buffer, static_cast<size_t>(n)), false);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // End of file, or an error: this stream is done.
    Emit(c, is_err, "", true);
    CloseFd(fd);
    return;
  }
}

void Supervisor::SignalAll(int sig) {
  for (Child& c : children_) {
    if (c.reaped || c.exit.pid <= 0) continue;
    // The rank's whole process group: what it started goes too.
    if (kill(-c.exit.pid, sig) != 0) kill(c.exit.pid, sig);
    c.exit.stopped = true;
  }
}

void Supervisor::Stop() {
  SignalAll(SIGTERM);
  kill_at_ = absl::Now() + options_.grace;
}

void Supervisor::OnLauncherSignal(int sig) {
  if (sig == SIGCHLD) return;  // Reap() looks
  if (result_.forwarded_signal == 0 && result_.failed_rank < 0) {
    result_.forwarded_signal = sig;
    err_ << "zero3 launch: got " << SignalName(sig)
         << ", forwarding it to every rank\n";
    err_.flush();
    SignalAll(sig);
    kill_at_ = absl::Now() + options_.grace;
  } else {
    // A second signal: stop waiting.
    if (result_.forwarded_signal == 0) result_.forwarded_signal = sig;
    SignalAll(SIGKILL);
    killed_ = true;
  }
}

void Supervisor::Reap() {
  for (Child& c : children_) {
    if (c.reaped) continue;
    int status = 0;
    const pid_t r = waitpid(c.exit.pid, &status, WNOHANG);
    if (r != c.exit.pid) continue;
    c.reaped = true;
    c.exit.signaled = WIFSIGNALED(status);
    c.exit.code = c.exit.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
    const bool failed =
        !c.exit.start_error.empty() || c.exit.signaled || c.exit.code != 0;
    if (failed && result_.failed_rank < 0 && result_.forwarded_signal == 0 &&
        !c.exit.stopped) {
      result_.failed_rank = c.exit.rank;
      SignalAll(SIGTERM);
      kill_at_ = absl::Now() + options_.grace;
    }
  }
}

bool Supervisor::AllReaped() const {
  for (const Child& c : children_) {
    if (!c.reaped) return false;
  }
  return true;
}

void Supervisor::Run(int signal_fd) {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Child*, bool>> owners;
    fds.push_back({signal_fd, POLLIN, 0});
    owners.emplace_back(nullptr, false);
    for (Child& c : children_) {
      if (c.out_fd >= 0) {
        fds.push_back({c.out_fd, POLLIN, 0});
        owners.emplace_back(&c, false);
      }
      if (c.err_fd >= 0) {
        fds.push_back({c.err_fd, POLLIN, 0});
        owners.emplace_back(&c, true);
      }
    }
    int timeout = kPollMillis;
    if (kill_at_ != absl::InfiniteFuture() && !killed_) {
      const int64_t left = absl::ToInt64Milliseconds(kill_at_ - absl::Now());
      timeout = static_cast<int>(
          std::max<int64_t>(0, std::min<int64_t>(left, kPollMillis)));
    }
    const int n = poll(fds.data(), fds.size(), timeout);
    if (n > 0) {
      if (fds[0].revents != 0) {
        unsigned char signals[64];
        const ssize_t got = read(signal_fd, signals, sizeof(signals));
        for (ssize_t i = 0; i < got; ++i) OnLauncherSignal(signals[i]);
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents != 0) ReadFrom(*owners[i].first, owners[i].second);
      }
    }
    Reap();
    if (!killed_ && absl::Now() >= kill_at_) {
      SignalAll(SIGKILL);
      killed_ = true;
    }
    if (AllReaped()) break;
  }
  // What the ranks wrote before exiting is in the pipes; read it, but do
  // not wait for processes they left behind that still hold the pipes.
  for (Child& c : children_) {
    for (bool is_err : {false, true}) {
      int& fd = is_err ? c.err_fd : c.out_fd;
      if (fd < 0) continue;
      ReadFrom(c, is_err);
      if (fd >= 0) {
        Emit(c, is_err, "", true);
        CloseFd(fd);
      }
    }
  }
}

std::string Describe(const RankExit& e) {
  if (!e.start_error.empty())
    return absl::StrCat("could not start: ", e.start_error);
  if (e.signaled) {
    return absl::StrCat("was killed by ", SignalName(e.code), " (",
                        strsignal(e.code), ")");
  }
  return absl::StrCat("exited with code ", e.code);
}

LaunchResult Supervisor::TakeResult() {
  for (const Child& c : children_) result_.ranks.push_back(c.exit);
  std::string& m = result_.message;
  if (result_.forwarded_signal != 0) {
    result_.exit_code = 128 + result_.forwarded_signal;
    m = absl::StrCat("zero3 launch: stopped by ",
                     SignalName(result_.forwarded_signal), "\n");
  } else if (result_.failed_rank >= 0) {
    const Child& c =
        children_[result_.failed_rank - options_.node_rank * options_.nprocs];
    result_.exit_code =
        c.exit.signaled || !c.exit.start_error.empty() ? 1 : c.exit.code;
    if (result_.exit_code == 0) result_.exit_code = 1;
    m = absl::StrCat("zero3 launch: rank ", c.exit.rank, " (pid ", c.exit.pid,
                     ") ", Describe(c.exit),
                     "; the other ranks were stopped\n");
    if (!c.err_tail.empty()) {
      absl::StrAppend(&m, "last ", c.err_tail.size(),
                      c.err_tail.size() == 1 ? " line" : " lines", " of rank ",
                      c.exit.rank, "'s stderr:\n");
      for (const std::string& line : c.err_tail) {
        absl::StrAppend(&m, "  ", line, "\n");
      }
    }
  } else {
    bool any_failed = false;
    for (const Child& c : children_) {
      any_failed |= c.exit.signaled || c.exit.code != 0;
    }
    if (!any_failed) return std::move(result_);
    result_.exit_code = 1;  // only ranks the launcher had stopped failed
  }
  std::vector<std::string> summary;
  for (const Child& c : children_) {
    std::string what;
    if (c.exit.stopped && c.exit.signaled) {
      what = absl::StrCat("stopped (", SignalName(c.exit.code), ")");
    } else if (c.exit.signaled || !c.exit.start_error.empty()) {
      what = Describe(c.exit);
    } else {
      what = absl::StrCat("exit code ", c.exit.code,
                          c.exit.stopped ? " after being stopped" : "");
    }
    summary.push_back(absl::StrCat("rank ", c.exit.rank, ": ", what));
  }
  absl::StrAppend(&m, "zero3 launch: ", absl::StrJoin(summary, "; "), "\n");
  return std::move(result_);
}

}  // namespace

absl::StatusOr<LaunchResult> LaunchLocal(const LaunchOptions& options,
                                         std::ostream& out, std::ostream& err) {
  if (options.argv.empty() || options.argv[0].empty()) {
    return absl::InvalidArgumentError("zero3 launch: nothing to run");
  }
  if (options.nprocs < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "zero3 launch: need at least one process, got ", options.nprocs));
  }
  if (options.nnodes < 1 || options.node_rank < 0 ||
      options.node_rank >= options.nnodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("zero3 launch: node rank ", options.node_rank,
                     " is not one of ", options.nnodes, " nodes"));
  }
  if (options.master_port < 0 || options.master_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "zero3 launch: ", options.master_port, " is not a TCP port"));
  }
  int port = options.master_port;
  if (port == 0) {
    absl::StatusOr<int> free_port = internal::PickFreePort();
    if (!free_port.ok()) return free_port.status();
    port = *free_port;
  }
  bool expected = false;
  if (!launch_active.compare_exchange_strong(expected, true)) {
    return absl::FailedPreconditionError(
        "zero3 launch: another launch is running in this process");
  }
  absl::StatusOr<Pipe> signal_pipe = MakePipe();
  if (!signal_pipe.ok()) {
    launch_active.store(false);
    return signal_pipe.status();
  }
  fcntl(signal_pipe->read, F_SETFL, O_NONBLOCK);
  fcntl(signal_pipe->write, F_SETFL, O_NONBLOCK);
  LaunchResult result;
  absl::Status status;
  {
    SignalRouting routing(signal_pipe->write);
    Supervisor supervisor(options, out, err);
    status = supervisor.Start(port);
    // Ranks already started are supervised (and stopped) even when a later
    // one could not be forked.
    if (!status.ok()) {
      supervisor.Stop();
      supervisor.Run(signal_pipe->read);
    } else {
      supervisor.Run(signal_pipe->read);
      result = supervisor.TakeResult();
      result.master_port = port;
    }
  }
  CloseFd(signal_pipe->read);
  CloseFd(signal_pipe->write);
  launch_active.store(false);
  if (!status.ok()) return status;
  return result;
}

namespace {

class LaunchCommand : public Command {
 public:
  absl::string_view name() const override { return "launch"; }

  absl::string_view summary() const override {
    return "start one process per GPU on this node running a zero3 command "
           "(like torchrun): launch --nproc-per-node 2 -- train --backend "
           "cuda";
  }

  absl::string_view description() const override {
    return "Starts --nproc-per-node processes of this zero3 binary, each "
           "running the command given after --, with RANK, LOCAL_RANK, "
           "WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and "
           "MASTER_PORT set as torchrun sets them; the cuda backend takes "
           "its GPU and rank from them. Every line the processes print is "
           "prefixed with [rank N]. SIGINT and SIGTERM are forwarded to "
           "every process. When one process fails (a non-zero exit or a "
           "signal), the others are stopped (SIGTERM, then SIGKILL after "
           "--stop-timeout) and the launcher exits with that process's exit "
           "code (1 if it was killed by a signal), naming the rank and "
           "quoting the end of its stderr. torchrun's spellings are "
           "accepted (--nproc_per_node, --master_port, --standalone, ...). "
           "For several nodes, run one launcher per node with --nnodes, "
           "--node-rank, --master-addr (node 0's address) and "
           "--master-port, e.g. from srun; or start every rank with srun "
           "or mpirun (docs/gpu.md).";
  }

  void DefineFlags(FlagSet& flags) override {
    flags.AddString("nproc-per-node", &nprocs_, "N|gpu",
                    "processes to start on this node, one per GPU; gpu: one "
                    "per visible GPU");
    flags.AddAlias("nproc-per-node", "nproc_per_node");
    flags.AddInt("nnodes", &nnodes_, "N",
                 "nodes of the job, each running zero3 launch");
    flags.AddInt("node-rank", &node_rank_, "R",
                 "this node's index, 0..nnodes-1 (node 0 runs rank 0)");
    flags.AddAlias("node-rank", "node_rank");
    flags.AddString("master-addr", &master_addr_, "HOST",
                    "the address of node 0, where rank 0 hands the NCCL id "
                    "to the others (needed with --nnodes above 1)");
    flags.AddAlias("master-addr", "master_addr");
    flags.AddInt("master-port", &master_port_, "PORT",
                 "TCP port on which rank 0 hands the NCCL id to the others; "
                 "0 picks a free one (one node only)");
    flags.AddAlias("master-port", "master_port");
    flags.AddBool("standalone", &standalone_,
                  "one node, a free port on this host (torchrun's "
                  "--standalone)");
    flags.SetDefaultText("standalone",
                         "on unless --nnodes, --node-rank or --master-addr "
                         "is given");
    flags.AddDouble("stop-timeout", &stop_timeout_, "SECONDS",
                    "how long stopped processes get to exit before SIGKILL");
    flags.AddBool("prefix", &prefix_,
                  "prefix each line of output with [rank N]");
    flags.AddBool("bind-cpus", &bind_cpus_,
                  "run each process on an equal share of this node's cores "
                  "(whole cores, neighbours together), so their host "
                  "optimizer threads do not compete");
    flags.AddRemainingPositionals(
        "COMMAND", &command_,
        "the zero3 command every process runs, with its arguments, e.g. "
        "train --backend cuda --steps 10");
  }

  int Run(const std::vector<std::string>& positional, std::ostream& out,
          std::ostream& err) override {
    if (command_.empty()) {
      err << "zero3 launch: nothing to launch; give the zero3 command after "
             "--, e.g. zero3 launch --nproc-per-node 2 -- train --backend "
             "cuda\n";
      return kExitUsage;
    }
    if (command_[0] == "launch") {
      err << "zero3 launch: the command to launch cannot be launch itself\n";
      return kExitUsage;
    }
    const absl::StatusOr<int> nprocs = ProcessesPerNode();
    if (!nprocs.ok()) {
      err << "zero3 launch: " << nprocs.status().message() << "\n";
      return kExitUsage;
    }
    if (master_port_ < 0 || master_port_ > 65535) {
      err << "zero3 launch: --master-port must be a TCP port (or 0), got "
          << master_port_ << "\n";
      return kExitUsage;
    }
    if (const absl::Status nodes = CheckNodes(); !nodes.ok()) {
      err << "zero3 launch: " << nodes.message() << "\n";
      return kExitUsage;
    }
    if (!(stop_timeout_ >= 0)) {
      err << "zero3 launch: --stop-timeout must not be negative\n";
      return kExitUsage;
    }
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
      err << "zero3 launch: cannot find this program (/proc/self/exe): "
          << ErrnoText(errno) << "\n";
      return kExitFailure;
    }
    LaunchOptions options;
    options.argv.push_back(std::string(self, static_cast<size_t>(n)));
    options.argv.insert(options.argv.end(), command_.begin(), command_.end());
    options.nprocs = *nprocs;
    options.nnodes = static_cast<int>(nnodes_);
    options.node_rank = static_cast<int>(node_rank_);
    if (!master_addr_.empty()) options.master_addr = master_addr_;
    options.master_port = static_cast<int>(master_port_);
    options.prefix_output = prefix_;
    options.bind_cpus = bind_cpus_;
    options.grace = absl::Seconds(stop_timeout_);
    if (options.master_port == 0) {
      absl::StatusOr<int> port = internal::PickFreePort();
      if (!port.ok()) {
        err << port.status().message() << "\n";
        return kExitFailure;
      }
      options.master_port = *port;
    }
    err << "zero3 launch: " << options.nprocs
        << (options.nprocs == 1 ? " process" : " processes")
        << (options.nnodes > 1
                ? absl::StrCat(
                      " (ranks ", options.node_rank * options.nprocs, "-",
                      (options.node_rank + 1) * options.nprocs - 1, " of ",
                      options.nnodes * options.nprocs, ", node ",
                      options.node_rank, " of ", options.nnodes, ")")
                : std::string())
        << " of 'zero3 " << absl::StrJoin(command_, " ")
        << "', MASTER_ADDR=" << options.master_addr
        << " MASTER_PORT=" << options.master_port << "\n";
    err.flush();
    absl::StatusOr<LaunchResult> result = LaunchLocal(options, out, err);
    if (!result.ok()) {
      err << result.status().message() << "\n";
      return kExitFailure;
    }
    err << result->message;
    err.flush();
    return result->exit_code;
  }

 private:
  // --nproc-per-node: a count in [1, 1024], or gpu (every visible GPU).
  absl::StatusOr<int> ProcessesPerNode() const {
    if (nprocs_ == "gpu") {
      const int gpus = internal::VisibleGpus();
      if (gpus < 1) {
        return absl::InvalidArgumentError(
            "--nproc-per-node gpu: no GPU is visible here (nvidia-smi; "
            "CUDA_VISIBLE_DEVICES)");
      }
      return gpus;
    }
    int n = 0;
    if (!absl::SimpleAtoi(nprocs_, &n) || n < 1 || n > 1024) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--nproc-per-node must be between 1 and 1024, or gpu, got '", nprocs_,
          "'"));
    }
    return n;
  }

  // --nnodes, --node-rank, --master-addr/--master-port and --standalone
  // together.
  absl::Status CheckNodes() const {
    if (nnodes_ < 1 || nnodes_ > 4096) {
      return absl::InvalidArgumentError(
          absl::StrCat("--nnodes must be between 1 and 4096, got ", nnodes_));
    }
    if (node_rank_ < 0 || node_rank_ >= nnodes_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--node-rank must be in [0, ", nnodes_ - 1, "], got ", node_rank_));
    }
    if (nnodes_ == 1) return absl::OkStatus();
    if (standalone_) {
      return absl::InvalidArgumentError(
          "--standalone is one node: drop it, or --nnodes");
    }
    if (master_addr_.empty() || master_port_ == 0) {
      return absl::InvalidArgumentError(
          "with --nnodes above 1 every node needs --master-addr (node 0's "
          "address) and the same --master-port");
    }
    return absl::OkStatus();
  }

  std::string nprocs_ = "1";
  int64_t nnodes_ = 1;
  int64_t node_rank_ = 0;
  std::string master_addr_;
  bool standalone_ = false;
  int64_t master_port_ = 0;
  double stop_timeout_ = 10;
  bool prefix_ = true;
  bool bind_cpus_ = true;
  std::vector<std::string> command_;
};

}  // namespace

std::unique_ptr<Command> NewLaunchCommand() {
  return std::make_unique<LaunchCommand>();
}

}  // namespace cli
}  // namespace zero3
