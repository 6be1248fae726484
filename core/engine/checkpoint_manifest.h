// Copyright 2026 The zero3 Authors.
//
// checkpoint_manifest.h: the manifest of a checkpoint directory
// (DIR/step_<N>/manifest.json; docs/checkpoints.md describes the format):
// what was saved (model, world size, sharding, batch shape, configuration)
// and each rank's shard file with its size and CRC-32C. Also: finding a
// checkpoint from what --resume names, checking its files, and checking
// that a run can resume from it. Errors name the file and what differs.
// Plain functions; thread-compatible.

#ifndef ZERO3_CORE_ENGINE_CHECKPOINT_MANIFEST_H_
#define ZERO3_CORE_ENGINE_CHECKPOINT_MANIFEST_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/config/json.h"
#include "core/io/atomic_file.h"
#include "core/model/data.h"
#include "core/model/model_spec.pb.h"
#include "core/zero/options.h"

namespace zero3 {
namespace engine {

// The version this build writes and the newest it reads.
inline constexpr int kCheckpointFormatVersion = 1;
inline constexpr char kManifestName[] = "manifest.json";
inline constexpr char kLatestName[] = "latest";
inline constexpr char kStepDirPrefix[] = "step_";
// The F32 tensors of every shard, each [partition_elements].
inline constexpr const char* kShardTensors[] = {"master", "exp_avg",
                                                "exp_avg_sq"};

// One rank's shard file, relative to the step directory.
struct CheckpointFile {
  int rank = 0;
  std::string name;
  int64_t bytes = 0;
  uint32_t crc32c = 0;
};

// Where one parameter lies in every rank's partition tensors.
struct CheckpointParam {
  std::string name;
  int64_t numel = 0;      // real elements
  int64_t partition = 0;  // elements per rank, padding included
  int64_t offset = 0;     // first element in each rank's tensors
};

struct CheckpointManifest {
  int format_version = kCheckpointFormatVersion;
  int64_t step = 0;  // optimizer steps taken
  int world_size = 1;
  model::ModelSpec spec;
  std::string dtype;  // the working dtype: "f32", "bf16", "f16"
  int64_t micro_batch = 0;
  int64_t seq = 0;
  int64_t accumulation = 0;
  int64_t partition_elements = 0;  // each rank's tensors' length
  std::vector<CheckpointParam> params;
  model::DataPosition data_position;
  config::JsonValue config;           // the resolved configuration
  std::vector<CheckpointFile> files;  // by rank
};

// The shard file of `rank`: "rank_00003.safetensors".
std::string ShardFileName(int rank);

std::string ManifestToJson(const CheckpointManifest& manifest);
// `path` names the file in errors.
absl::StatusOr<CheckpointManifest> ParseManifest(absl::string_view text,
                                                 const std::string& path);
// Reads STEP_DIR/manifest.json; NotFound naming it when missing.
absl::StatusOr<CheckpointManifest> ReadManifest(const std::string& step_dir);

// The complete checkpoints in `dir` (step_<N> directories that hold a
// manifest), newest first: (N, "step_<N>").
std::vector<std::pair<int64_t, std::string>> CompleteCheckpoints(
    const std::string& dir);

// The step directory `path` names: itself when it holds a manifest, else
// the one its `latest` file names - or a newer complete checkpoint in it
// (a save cut short between its manifest and `latest`). NotFound, naming
// both, when there is none.
absl::StatusOr<std::string> ResolveCheckpoint(const std::string& path);

// Reads the file at `path` once, start to end, in pieces, handing each to
// `piece` (with its offset in the file; may be empty); returns the file's
// size and CRC-32C. NotFound or Internal naming the file.
absl::StatusOr<io::FileDigest> ReadFileDigest(
    const std::string& path,
    const std::function<void(int64_t, absl::string_view)>& piece = {});
// `digest` (of the file at `path`) is what `file` records; InvalidArgument
// naming the file and the difference (size: truncated or replaced; else
// corrupted).
absl::Status CheckFileDigest(const std::string& path,
                             const io::FileDigest& digest,
                             const CheckpointFile& file);
// Every shard file of `manifest` (in `step_dir`) exists with its recorded
// size and checksum; InvalidArgument naming the file and the difference.
absl::Status VerifyCheckpointFiles(const std::string& step_dir,
                                   const CheckpointManifest& manifest);

// A run of `spec` and `options` on `world_size` ranks can continue from
// `manifest` (read from `path`): the same model and sequence length, and
// the same global batch (ranks x micro-batch x accumulation; each may
// differ). InvalidArgument naming the file and what differs.
absl::Status CheckResumable(const CheckpointManifest& manifest,
                            const std::string& path,
                            const model::ModelSpec& spec,
                            const zero::ZeroOptions& options, int world_size);

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_CHECKPOINT_MANIFEST_H_
