// Copyright 2026 The zero3 Authors.
//
// checkpoint.h: saving and resuming the engine's training state
// (docs/checkpoints.md).
//
//   DIR/step_<N>/rank_<r>.safetensors   each rank's master, moments, counters
//   DIR/step_<N>/manifest.json          written by rank 0 once all shards are
//   DIR/latest                          "step_<N>", replaced last, atomically
//
// Every rank calls SaveCheckpoint at the same step (it holds collectives):
// each writes its shard (atomically: temporary file, fsync, rename,
// directory fsync); the ranks agree that every shard is written; rank 0
// checksums the shards, writes the manifest and then `latest`, and removes
// the checkpoints beyond keep_last; the ranks agree again. A failure at any
// point leaves `latest` naming the previous checkpoint, and every rank
// returns an error (Aborted on the ranks whose own part succeeded).
//
// LoadCheckpoint is SaveCheckpoint's inverse, called by every rank on a
// fresh engine before its first step; the engine may have another number of
// ranks than the saving run (each rank reads just the ranges of its
// partitions from the shards that hold them). Thread-compatible.

#ifndef ZERO3_CORE_ENGINE_CHECKPOINT_H_
#define ZERO3_CORE_ENGINE_CHECKPOINT_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/config/json.h"
#include "core/engine/checkpoint_manifest.h"
#include "core/engine/engine.h"
#include "core/model/model_spec.pb.h"
#include "core/runtime/runtime.h"

namespace zero3 {
namespace engine {

struct SaveOptions {
  std::string dir;    // created if missing (its parent must exist)
  int keep_last = 0;  // complete checkpoints kept in `dir`; 0 keeps all
  // The resolved configuration, for the manifest (an object).
  config::JsonValue config = config::JsonValue::Object();
};

// Saves `engine`'s state after its steps_done() steps to
// options.dir/step_<N>. Returns the step directory. An existing
// step_<N> with a manifest is an error (AlreadyExists, naming it).
absl::StatusOr<std::string> SaveCheckpoint(Engine& engine, runtime::Runtime& rt,
                                           const SaveOptions& options);

// Loads this rank's partitions from the checkpoint in `step_dir` (whose
// manifest is `manifest`, checked by CheckResumable) into `engine`: the
// size and checksum of each shard it reads are checked first, and the
// ranks agree that each read its state before any engine takes it.
absl::Status LoadCheckpoint(Engine& engine, runtime::Runtime& rt,
                            const std::string& step_dir,
                            const CheckpointManifest& manifest);

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_CHECKPOINT_H_
