// Copyright 2026 The zero3 Authors.
//
// checkpoint_flags.h: zero3 train's checkpoint flags (--save,
// --save-interval, --keep-last, --resume; docs/checkpoints.md) and what
// they decide: the checkpoint a run resumes from, checked before any rank
// starts, and the steps after which it saves.
//
//   CheckpointFlags checkpoints;
//   checkpoints.Define(flags);                       // in DefineFlags
//   ZR_RETURN_IF_ERROR(checkpoints.Check(...));      // with the other flags
//   ZR_ASSIGN_OR_RETURN(auto resume, checkpoints.OpenResume(...));
//
// Not thread-safe: the flag parser writes the members; the const methods
// may be called from every rank.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_CHECKPOINT_FLAGS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_CHECKPOINT_FLAGS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/config/json.h"
#include "core/engine/checkpoint.h"
#include "core/engine/checkpoint_manifest.h"
#include "core/model/data.h"
#include "core/model/model_spec.pb.h"
#include "core/zero/options.h"
#include "tools/cli/flags.h"
#include "tools/cli/internal/run_lock.h"

namespace zero3 {
namespace cli {
namespace internal {

// A checked checkpoint to resume from.
struct ResumePoint {
  std::string step_dir;
  engine::CheckpointManifest manifest;
};

class CheckpointFlags {
 public:
  // Adds the flags, as one block.
  void Define(FlagSet& flags);

  // The flags' combinations with the run's --mode (data or not), and
  // --predict or --profile-ops (`timed_ops`); InvalidArgument naming the
  // flag.
  absl::Status Check(bool data_mode, bool timed_ops) const;

  bool saving() const { return !save_.empty(); }
  bool resuming() const { return !resume_.empty(); }

  // The --resume checkpoint (paths resolved with `resolve`), its manifest
  // checked against the run (model, world size, batch shape), and `data`
  // set to its position. The shards are checked by the ranks that read
  // them (engine::LoadCheckpoint). nullopt without --resume.
  absl::StatusOr<std::optional<ResumePoint>> OpenResume(
      const std::string& resolved_path, const model::ModelSpec& spec,
      const zero::ZeroOptions& options, int world_size, int64_t steps,
      model::BatchSource& data) const;

  // Creates the --save directory (`resolved_dir`) if missing, so that a
  // path that cannot be written fails the run before its first step; locks
  // it for this run (RunLock: a second run saving there is refused, naming
  // this one); and checks that no checkpoint this run would save (after
  // step `first_step` up to `steps`) exists there already, so that a long
  // run does not fail at its first save and a finished step is never
  // overwritten: InvalidArgument naming the path and the fix. The lock is
  // held until this object goes or the process ends.
  absl::Status PrepareSave(const std::string& resolved_dir, int64_t first_step,
                           int64_t steps);

  // Whether to save after `steps_done` of the run's `steps`: every
  // --save-interval steps and at the end.
  bool SaveDue(int64_t steps_done, int64_t steps) const;

  // What SaveCheckpoint needs: the directory (resolved), --keep-last and
  // the resolved configuration.
  engine::SaveOptions Save(const std::string& resolved_dir,
                           const config::JsonValue& config) const;

  const std::string& save_dir() const { return save_; }
  const std::string& resume_path() const { return resume_; }

 private:
  // Removes the temporary files a killed run left in `dir` and its step
  // directories (PrepareSave, under the lock).
  void RemoveLeftovers(const std::string& dir) const;
  // PrepareSave's check of the step directories already in `dir`.
  absl::Status CheckNoCollision(const std::string& dir, int64_t first_step,
                                int64_t steps) const;

  std::string save_;
  std::string resume_;
  std::unique_ptr<RunLock> lock_;
  int64_t save_interval_ = 0;
  int64_t keep_last_ = 0;
};

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_CHECKPOINT_FLAGS_H_
