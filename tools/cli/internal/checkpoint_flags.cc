// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/checkpoint_flags.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cli {
namespace internal {

void CheckpointFlags::Define(FlagSet& flags) {
  flags.AddString("save", &save_, "DIR",
                  "save checkpoints to DIR/step_<N> (every --save-interval "
                  "steps and at the end of the run); DIR/latest names the "
                  "newest complete one (docs/checkpoints.md)");
  flags.AddInt("save-interval", &save_interval_, "N",
               "with --save: also save every N steps", {0, 1000000});
  flags.AddInt("keep-last", &keep_last_, "N",
               "with --save: keep only the newest N checkpoints in DIR",
               {0, 1000000});
  flags.AddString("resume", &resume_, "DIR",
                  "continue training from a checkpoint: a --save directory "
                  "(its latest) or one of its step_<N> directories; --steps "
                  "counts from the start of training");
}

absl::Status CheckpointFlags::Check(bool data_mode, bool timed_ops) const {
  if (save_interval_ < 0 || keep_last_ < 0) {
    return absl::InvalidArgumentError(
        "--save-interval and --keep-last must be at least 0");
  }
  if (!saving() && (save_interval_ > 0 || keep_last_ > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(save_interval_ > 0 ? "--save-interval" : "--keep-last",
                     " applies to --save DIR: add it"));
  }
  if ((saving() || resuming()) && !data_mode) {
    return absl::InvalidArgumentError(absl::StrCat(
        saving() ? "--save" : "--resume",
        " needs values: use --mode data (timing mode holds none)"));
  }
  if (resuming() && timed_ops) {
    return absl::InvalidArgumentError(
        "--resume does not combine with --predict or --profile-ops yet: they "
        "compare the run from its start");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ResumePoint>> CheckpointFlags::OpenResume(
    const std::string& resolved_path, const model::ModelSpec& spec,
    const zero::ZeroOptions& options, int world_size, int64_t steps,
    model::BatchSource& data) const {
  if (!resuming()) return std::nullopt;
  ResumePoint p;
  ZR_ASSIGN_OR_RETURN(p.step_dir, engine::ResolveCheckpoint(resolved_path));
  ZR_ASSIGN_OR_RETURN(p.manifest, engine::ReadManifest(p.step_dir));
  const std::string manifest_path =
      absl::StrCat(p.step_dir, "/", engine::kManifestName);
  ZR_RETURN_IF_ERROR(engine::CheckResumable(p.manifest, manifest_path, spec,
                                            options, world_size));
  if (p.manifest.step >= steps) {
    return absl::InvalidArgumentError(
        absl::StrCat("--steps ", steps,
                     " counts from the start of training and the "
                     "checkpoint ",
                     p.step_dir, " is at step ", p.manifest.step,
                     ": nothing left to train (raise --steps)"));
  }
  const model::BatchShape shape{options.micro_batch, options.seq,
                                options.accumulation, world_size};
  if (data.PositionAt(shape, p.manifest.step) != p.manifest.data_position) {
    ZR_RETURN_IF_ERROR(
        data.SetPosition(shape, p.manifest.step, p.manifest.data_position));
  }
  return p;
}

absl::Status CheckpointFlags::PrepareSave(const std::string& resolved_dir,
                                          int64_t first_step, int64_t steps) {
  if (!saving()) return absl::OkStatus();
  if (mkdir(resolved_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InvalidArgumentError(
        absl::StrCat("--save: cannot create checkpoint directory ",
                     resolved_dir, ": ", std::strerror(errno)));
  }
  if (access(resolved_dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--save: cannot write checkpoints in ", resolved_dir, ": ",
                     std::strerror(errno)));
  }
  ZR_ASSIGN_OR_RETURN(lock_, RunLock::Acquire(resolved_dir, "--save"));
  RemoveLeftovers(resolved_dir);
  return CheckNoCollision(resolved_dir, first_step, steps);
}

// Under the lock no other run writes here: every temporary file is a dead
// run's (kill -9 mid-save), shards of full size among them.
void CheckpointFlags::RemoveLeftovers(const std::string& dir) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto sweep = [&](const fs::path& folder) {
    for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
      const std::string name = e.path().filename().string();
      if (absl::StrContains(name, ".tmp.") && e.is_regular_file(ec)) {
        fs::remove(e.path(), ec);
      }
    }
  };
  sweep(dir);
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (absl::StartsWith(e.path().filename().string(), "step_") &&
        e.is_directory(ec)) {
      sweep(e.path());
    }
  }
}

absl::Status CheckpointFlags::CheckNoCollision(const std::string& dir,
                                               int64_t first_step,
                                               int64_t steps) const {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return absl::OkStatus();
  absl::Status status;
  while (const dirent* e = readdir(d)) {
    int64_t step = 0;
    if (!absl::StartsWith(e->d_name, "step_") ||
        !absl::SimpleAtoi(e->d_name + 5, &step) || step <= first_step ||
        step > steps || !SaveDue(step, steps)) {
      continue;
    }
    const std::string manifest =
        absl::StrCat(dir, "/", e->d_name, "/manifest.json");
    if (access(manifest.c_str(), F_OK) == 0) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "--save: this run would save step ", step, " but ", manifest,
          " exists already: save into another directory, remove it, or "
          "--resume from it"));
      break;
    }
  }
  closedir(d);
  return status;
}

bool CheckpointFlags::SaveDue(int64_t steps_done, int64_t steps) const {
  if (!saving()) return false;
  return steps_done == steps ||
         (save_interval_ > 0 && steps_done % save_interval_ == 0);
}

engine::SaveOptions CheckpointFlags::Save(
    const std::string& resolved_dir, const config::JsonValue& config) const {
  engine::SaveOptions o;
  o.dir = resolved_dir;
  o.keep_last = static_cast<int>(keep_last_);
  o.config = config;
  return o;
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
