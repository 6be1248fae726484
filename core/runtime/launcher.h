// Copyright 2026 The zero3 Authors.
//
// launcher.h: starting the ranks of a job on a backend.
//
// A tool picks its backend by making that backend's Launcher (the
// simulator's in sim/sim_launcher.h, CUDA's in backends/cuda/
// cuda_launcher.h) and hands it the RankFunction each rank runs; the rest of
// the tool is written against this interface and Runtime:
//
//   ZR_ASSIGN_OR_RETURN(std::unique_ptr<Launcher> launcher, ...);
//   ZR_RETURN_IF_ERROR(launcher->Run([&](Runtime& rt) -> absl::Status {
//     ...one rank's work...
//   }));
//   if (!launcher->leader()) return absl::OkStatus();
//   ZR_ASSIGN_OR_RETURN(int problems, launcher->Report(out));
//
// A job has world_size() ranks; this process runs some of them (its local
// ranks) and sees only their results: the simulator runs every simulated
// rank in one process, the CUDA backend one GPU's rank per process (or
// several GPUs' ranks in one process, for tests and calibration).
//
// Not thread-safe: one thread calls a launcher; Run may call the rank
// function on threads of its own.

#ifndef ZERO3_CORE_RUNTIME_LAUNCHER_H_
#define ZERO3_CORE_RUNTIME_LAUNCHER_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/op_timing.h"
#include "core/runtime/runtime.h"

namespace zero3 {
namespace runtime {

class Launcher {
 public:
  virtual ~Launcher() = default;

  // Ranks in the job, over all of its processes.
  virtual int world_size() const = 0;

  // The ranks this process runs, whose results are the only ones it sees:
  // ranks first_local_rank() .. first_local_rank() + local_ranks() - 1.
  virtual int first_local_rank() const = 0;
  virtual int local_ranks() const = 0;

  // Whether this process runs rank 0, which reports for the job.
  bool leader() const { return first_local_rank() == 0; }

  // What the ranks run on, for a report's header: "GPUs (cuda)", or the
  // simulated hardware and mode, "h200_sxm (timing)".
  virtual std::string description() const = 0;

  // Runs `fn` once on each local rank, each with a Runtime of its own, and
  // blocks until all are done. Returns the first error by rank, or the
  // backend's own (a start-up failure, a deadlock).
  virtual absl::Status Run(const RankFunction& fn) = 0;

  // Times every device operation of `rt`, a runtime that Run handed to the
  // rank function, from now on; TakeOpTimings waits for the device and
  // returns the operations issued since the previous call. Unimplemented
  // where the backend does not time operations.
  virtual absl::Status StartOpTiming(Runtime& rt) {
    return absl::UnimplementedError("this backend does not time operations");
  }
  virtual absl::StatusOr<std::vector<OpTiming>> TakeOpTimings(Runtime& rt) {
    return absl::UnimplementedError("this backend does not time operations");
  }

  // After the runs: writes to `out` what the backend itself found out
  // about them (the simulator: the trace file it wrote, every race its race
  // detector reported) and returns how many problems it found; a job with
  // problems failed even where every rank succeeded. Errors are the
  // backend's own (writing the trace). Nothing, and 0, by default.
  virtual absl::StatusOr<int> Report(std::ostream& out) { return 0; }
};

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_LAUNCHER_H_
