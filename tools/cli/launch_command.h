// Copyright 2026 The zero3 Authors.
//
// launch_command.h: `zero3 launch`, which starts one process per GPU on this
// node, and LaunchLocal, the process launcher beneath it.
//
//   zero3 launch --nproc-per-node 2 -- train --backend cuda --model tiny
//
// starts two copies of this zero3 binary running `train --backend cuda
// --model tiny`, with the variables torchrun sets: RANK and LOCAL_RANK (0
// and 1), WORLD_SIZE and LOCAL_WORLD_SIZE (2), GROUP_RANK (0), MASTER_ADDR
// (127.0.0.1) and MASTER_PORT (a free port unless --master-port is given).
// The CUDA backend reads them (backends/cuda/rank_env.h) and its rank 0
// hands the NCCL id to the other over TCP at that address.
//
// Supervision, as torchrun does it for one node:
//  - Each line a rank writes to stdout or stderr is passed through to the
//    launcher's, prefixed with "[rank N] ".
//  - SIGINT, SIGTERM and SIGHUP sent to the launcher are forwarded to every
//    rank (each rank is its own process group, so the whole group gets
//    it: a terminal's Ctrl-C reaches the ranks once, through the
//    launcher); ranks still running `grace` later are killed (SIGKILL), as
//    are all of them at a second signal. The launcher then exits with
//    128 + the signal number.
//  - When a rank exits with a non-zero code or is killed by a signal, the
//    others are sent SIGTERM (and SIGKILL after `grace`), and the launcher
//    prints a message naming that rank, its exit code or signal, and the
//    last lines of its stderr, and exits with the rank's exit code (1 when
//    it was killed by a signal). A rank blocked in a collective whose peer
//    died would otherwise wait forever.
//  - If the launcher itself dies, the ranks get SIGKILL (PR_SET_PDEATHSIG).
//  - `zero3 launch` binds each rank to an equal share of the node's cores
//    (--bind-cpus, on by default), so that the ranks' host optimizer
//    threads do not compete for the same cores.
//
// Thread-safety: LaunchLocal installs process-wide signal handlers for its
// duration (restoring the previous ones after), so only one call may run
// at a time in a process; a concurrent call fails with FailedPrecondition.

#ifndef ZERO3_TOOLS_CLI_LAUNCH_COMMAND_H_
#define ZERO3_TOOLS_CLI_LAUNCH_COMMAND_H_

#include <sys/types.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/cli/command.h"

namespace zero3 {
namespace cli {

struct LaunchOptions {
  // The program and its arguments, run once per rank. argv[0] is searched
  // in PATH when it has no '/'.
  std::vector<std::string> argv;
  // Processes on this node.
  int nprocs = 1;
  // Nodes of the job, each running a launcher with the same nprocs, and
  // this node's index: its ranks are node_rank * nprocs + 0..nprocs-1 of
  // nnodes * nprocs (GROUP_RANK is node_rank).
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  // 0: a port free on this host when the ranks start.
  int master_port = 0;
  // Prefix every line of a rank's output with "[rank N] ".
  bool prefix_output = true;
  // Lines of a failed rank's stderr quoted in the message.
  int tail_lines = 20;
  // How long ranks get to exit after SIGTERM before SIGKILL.
  absl::Duration grace = absl::Seconds(10);
  // Give each rank an equal share of the launcher's CPUs, in whole cores
  // (core/util/cpu_binding.h); ranks stay unbound when there are fewer cores
  // than ranks.
  bool bind_cpus = false;
};

// How one rank ended.
struct RankExit {
  int rank = 0;
  pid_t pid = 0;
  // Killed by signal `code`; otherwise exited with code `code`.
  bool signaled = false;
  int code = 0;
  // The launcher had signalled it (stopping after another rank failed, or
  // forwarding a signal) before it ended.
  bool stopped = false;
  // Why it could not start (exec failed); empty when it started.
  std::string start_error;
};

struct LaunchResult {
  // Every rank, in rank order.
  std::vector<RankExit> ranks;
  // The rank whose failure stopped the others, or -1.
  int failed_rank = -1;
  // The signal the launcher received and forwarded, or 0.
  int forwarded_signal = 0;
  // The port the ranks were given as MASTER_PORT.
  int master_port = 0;
  // For the user: what failed and why; empty when every rank exited 0.
  std::string message;
  // What the launcher exits with: 0; the failed rank's exit code, or 1 when
  // it was killed by a signal; 128 + signal when interrupted.
  int exit_code = 0;
};

// Starts options.nprocs processes of options.argv with the rank variables
// above, passes their output through to `out` and `err`, supervises them
// as described in the file comment, and returns once all have exited.
// Errors are the launcher's own (invalid options, no free port, fork
// failed); a failing rank is reported in the result.
absl::StatusOr<LaunchResult> LaunchLocal(const LaunchOptions& options,
                                         std::ostream& out, std::ostream& err);

std::unique_ptr<Command> NewLaunchCommand();

}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_LAUNCH_COMMAND_H_
