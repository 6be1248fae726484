// Copyright 2026 The zero3 Authors.
//
// checkpoint.h: saving and resuming the engine's training state
// (docs/checkpoints.md).
//
//   DIR/step_<N>/rank_<r>.safetensors   each rank's master, moments, counters
//   DIR/step_<N>/manifest.json          written by rank 0 once all shards are
//   DIR/latest                          "step_<N>", replaced last, atomically
//
// Every rank saves at the same step (a save holds collectives): each takes
// a snapshot of its state in host memory and writes its shard from it
// (atomically: temporary file, fsync, rename, directory fsync), computing
// the shard's size and CRC-32C as it goes - in a background thread with
// SaveOptions::async, while training goes on; the ranks agree that every
// shard is written and exchange the checksums; rank 0 writes the manifest
// and then `latest`, and removes the checkpoints beyond keep_last; the
// ranks agree again. A failure at any point leaves `latest` naming the
// previous checkpoint, and every rank returns an error (Aborted on the
// ranks whose own part succeeded).
//
//   CheckpointSaver saver(engine, rt, options);
//   ... after a step:  saver.Poll()     // publishes a finished write
//   ... to save:       saver.Finish(); saver.Start();
//   ... at the end:    saver.Finish();
//
// LoadCheckpoint is SaveCheckpoint's inverse, called by every rank on a
// fresh engine before its first step; the engine may have another number of
// ranks than the saving run (each rank reads the shards that hold its
// partitions, each once, checking them; checkpoint_load.cc).
// Thread-compatible.

#ifndef ZERO3_CORE_ENGINE_CHECKPOINT_H_
#define ZERO3_CORE_ENGINE_CHECKPOINT_H_

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/json.h"
#include "core/engine/checkpoint_manifest.h"
#include "core/engine/engine.h"
#include "core/io/atomic_file.h"
#include "core/kernels/dtype.h"
#include "core/model/data.h"
#include "core/model/model_spec.pb.h"
#include "core/runtime/runtime.h"

namespace zero3 {
namespace engine {

struct SaveOptions {
  std::string dir;    // created if missing (its parent must exist)
  int keep_last = 0;  // complete checkpoints kept in `dir`; 0 keeps all
  // The resolved configuration, for the manifest (an object).
  config::JsonValue config = config::JsonValue::Object();
  // Write the shard in a background thread (CheckpointSaver).
  bool async = false;
};

// One rank's state as a save took it: what its shard holds.
struct ShardSnapshot {
  TrainingState state;
  model::DataPosition data;
  int rank = 0;
  int world_size = 1;
  // How the master and the moments are saved: F32, or BF16 where the
  // engine keeps them in bf16 (its values are bf16's then: saved exactly).
  kernels::DType master_dtype = kernels::DType::kF32;
  kernels::DType moments_dtype = kernels::DType::kF32;
};

// A checkpoint published: its step and directory (empty: none).
struct SavedCheckpoint {
  int64_t step = 0;
  std::string dir;
};

// One rank's saves, one in flight at a time. Start, Poll and Finish are
// called by every rank at the same step (Poll and Finish hold
// collectives); not thread-safe. The background write reads only the
// snapshot.
class CheckpointSaver {
 public:
  CheckpointSaver(Engine& engine, runtime::Runtime& rt, SaveOptions options);
  // Waits for a write in flight; its checkpoint is not published.
  ~CheckpointSaver();
  CheckpointSaver(const CheckpointSaver&) = delete;
  CheckpointSaver& operator=(const CheckpointSaver&) = delete;

  // Starts saving the engine's state after its steps_done() steps to
  // options.dir/step_<N>: makes the directories, takes the snapshot (host
  // copies, in host tasks), and writes the shard - in a background thread
  // when options.async, else before returning. Its errors (an existing
  // step_<N> with a manifest is AlreadyExists) are reported by Finish, on
  // every rank. No save may be in flight.
  absl::Status Start();
  // When every rank's write is done: Finish. Otherwise (or with nothing in
  // flight) an empty SavedCheckpoint. A 1-element all-reduce while a save
  // is in flight.
  absl::StatusOr<SavedCheckpoint> Poll();
  // Waits for the write in flight, then the ranks agree and rank 0
  // publishes (manifest, latest, retention). Returns the checkpoint
  // published; an empty one when nothing was in flight.
  absl::StatusOr<SavedCheckpoint> Finish();

  bool in_flight() const { return in_flight_; }

 private:
  struct Pending {
    int64_t step = 0;
    std::string step_name;
    std::string step_dir;
    ShardSnapshot snapshot;
    CheckpointManifest manifest;  // rank 0's, without the files
    absl::Status status;          // of the preparation or the write
    io::FileDigest digest;        // of the shard written
  };

  Engine& engine_;
  runtime::Runtime& rt_;
  const SaveOptions options_;
  Pending pending_;
  // The last snapshot's vectors, kept for the next (no allocation, no page
  // faults); touched by the writer only while a save is in flight.
  TrainingState spare_;
  bool in_flight_ = false;
  std::atomic<bool> done_{false};  // the write in flight has ended
  std::thread writer_;
};

// With more than one rank (and a runtime that holds values): that `dir`,
// as this rank names it, is the directory rank 0 sees too - every rank
// writes its shard there and rank 0 publishes the checkpoint, so on several
// nodes it must be on a file system they share. Rank 0 writes a file with
// a random token there, every rank looks for it, and the ranks agree;
// InvalidArgument (the path given is wrong) on every rank when any does not
// see it, naming `dir` and whether this rank sees it. Makes `dir` if missing
// (its parent must exist). Every rank must call it (collectives); run it before
// training.
absl::Status CheckSharedDirectory(Engine& engine, runtime::Runtime& rt,
                                  const std::string& dir);

// Saves `engine`'s state after its steps_done() steps to
// options.dir/step_<N> and publishes it before returning (options.async is
// ignored). Returns the step directory. An existing step_<N> with a
// manifest is an error (AlreadyExists, naming it).
absl::StatusOr<std::string> SaveCheckpoint(Engine& engine, runtime::Runtime& rt,
                                           const SaveOptions& options);

// Loads this rank's partitions from the checkpoint in `step_dir` (whose
// manifest is `manifest`, checked by CheckResumable) into `engine`: the
// size and checksum of each shard it reads are checked first, and the
// ranks agree that each read its state before any engine takes it.
absl::Status LoadCheckpoint(Engine& engine, runtime::Runtime& rt,
                            const std::string& step_dir,
                            const CheckpointManifest& manifest);

// Every parameter's whole state in a checkpoint, as a run of one rank
// would hold it: for --check-reference of a resumed run (the reference
// trainer starts from it).
struct WholeState {
  // By parameter, each [numel].
  std::vector<std::vector<float>> master, exp_avg, exp_avg_sq;
  TrainingState counters;  // steps and loss scaler; no values
};

// Reads `step_dir`'s checkpoint (manifest `manifest`) whole, each shard
// read once and checked (size and CRC-32C).
absl::StatusOr<WholeState> ReadWholeState(const std::string& step_dir,
                                          const CheckpointManifest& manifest);

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_CHECKPOINT_H_
