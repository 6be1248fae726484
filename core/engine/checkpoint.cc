// Copyright 2026 The zero3 Authors.

#include "core/engine/checkpoint.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "core/engine/checkpoint_fault.h"
#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/kernels/dtype.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace engine {
namespace {

absl::Status MakeDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) {
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return absl::OkStatus();
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot save a checkpoint in ", path, ": not a directory"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot create checkpoint directory ", path, ": ", std::strerror(errno)));
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Writes `bytes` to `path` through the atomic writer.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view bytes) {
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<io::AtomicFile> f,
                      io::AtomicFile::Create(path));
  ZR_RETURN_IF_ERROR(f->Write(bytes));
  return f->Commit();
}

std::string Float64Text(double v) { return absl::StrFormat("%.17g", v); }

// Makes `dir` and `step_dir`; AlreadyExists when `step_dir` holds a
// checkpoint (of `step`).
absl::Status PrepareStepDirectory(const std::string& dir,
                                  const std::string& step_dir, int64_t step) {
  ZR_RETURN_IF_ERROR(MakeDirectory(dir));
  const std::string manifest = absl::StrCat(step_dir, "/", kManifestName);
  if (Exists(manifest)) {
    return absl::AlreadyExistsError(
        absl::StrCat("a checkpoint of step ", step, " exists already (",
                     manifest, "): save into another directory or remove it"));
  }
  return MakeDirectory(step_dir);
}

// Writes a snapshot as `path` (a shard); its size and CRC-32C into
// `digest`. Reads only the snapshot.
absl::Status WriteShardFile(const ShardSnapshot& snap, const std::string& path,
                            io::FileDigest* digest) {
  const TrainingState& state = snap.state;
  const io::Metadata metadata = {
      {"format", "zero3-checkpoint-shard"},
      {"format_version", absl::StrCat(kCheckpointFormatVersion)},
      {"rank", absl::StrCat(snap.rank)},
      {"world_size", absl::StrCat(snap.world_size)},
      {"steps_done", absl::StrCat(state.steps_done)},
      {"adam_steps", absl::StrCat(state.adam_steps)},
      {"loss_scale", Float64Text(state.scaler.scale)},
      {"loss_scale_cur_hysteresis", absl::StrCat(state.scaler.cur_hysteresis)},
      {"loss_scale_iteration", absl::StrCat(state.scaler.iteration)},
      {"loss_scale_last_overflow", absl::StrCat(state.scaler.last_overflow)},
      {"data_epoch", absl::StrCat(snap.data.epoch)},
      {"data_index", absl::StrCat(snap.data.index)},
  };
  const std::vector<float>* values[] = {&state.master, &state.exp_avg,
                                        &state.exp_avg_sq};
  const kernels::DType dtypes[] = {snap.master_dtype, snap.moments_dtype,
                                   snap.moments_dtype};
  std::vector<io::TensorToWrite> tensors;
  std::vector<uint16_t> narrowed[3];
  for (int i = 0; i < 3; ++i) {
    const std::vector<float>& v = *values[i];
    io::TensorToWrite t;
    t.name = kShardTensors[i];
    t.shape = {static_cast<int64_t>(v.size())};
    if (dtypes[i] == kernels::DType::kBF16) {
      // bf16 values held in floats: their top halves, exactly.
      narrowed[i].resize(v.size());
      kernels::FloatToBF16(v, absl::MakeSpan(narrowed[i]));
      t.dtype = io::TensorDType::kBF16;
      t.data = absl::string_view(
          reinterpret_cast<const char*>(narrowed[i].data()), v.size() * 2);
    } else {
      t.data = absl::string_view(reinterpret_cast<const char*>(v.data()),
                                 v.size() * sizeof(float));
    }
    tensors.push_back(t);
  }
  ZR_RETURN_IF_ERROR(CheckpointFaultPoint("before_shard", path));
  ZR_RETURN_IF_ERROR(io::WriteSafetensors(path, tensors, metadata, digest));
  return CheckpointFaultPoint("after_shard", path);
}

CheckpointManifest MakeManifest(const Engine& e, runtime::Runtime& rt,
                                const SaveOptions& o) {
  CheckpointManifest m;
  m.step = e.steps_done();
  m.world_size = rt.world_size();
  m.spec = e.model().spec();
  m.dtype = std::string(kernels::DTypeName(e.options().dtype));
  m.micro_batch = e.options().micro_batch;
  m.seq = e.options().seq;
  m.accumulation = e.options().accumulation;
  m.partition_elements = e.layout().total();
  for (const model::ParamInfo& p : e.model().params()) {
    const zero::ParamShard& s = e.layout().param(p.id);
    m.params.push_back({p.name, s.numel, s.partition, s.offset});
  }
  m.data_position = e.data_position();
  m.config = o.config;
  return m;
}

// Removes the complete checkpoints beyond the newest `keep_last`, never
// `current`; each loses its manifest first, so a removal cut short leaves
// no checkpoint that looks complete.
absl::Status Retain(const std::string& dir, int keep_last,
                    const std::string& current) {
  if (keep_last <= 0) return absl::OkStatus();
  int kept = 0;
  for (const auto& checkpoint : CompleteCheckpoints(dir)) {
    const std::string& name = checkpoint.second;
    if (name == current || kept < keep_last - 1) {
      if (name != current) ++kept;
      continue;
    }
    const std::string path = absl::StrCat(dir, "/", name);
    std::error_code ec;
    std::filesystem::remove(absl::StrCat(path, "/", kManifestName), ec);
    if (!ec) std::filesystem::remove_all(path, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat("cannot remove old checkpoint ",
                                              path, " (keep_last ", keep_last,
                                              "): ", ec.message()));
    }
  }
  return absl::OkStatus();
}

// Rank 0, once every shard is written: the manifest, then `latest`.
absl::Status Publish(CheckpointManifest m, const SaveOptions& o,
                     const std::string& step_dir, const std::string& step_name,
                     std::vector<CheckpointFile> files) {
  m.files = std::move(files);
  const std::string manifest = absl::StrCat(step_dir, "/", kManifestName);
  const std::string latest = absl::StrCat(o.dir, "/", kLatestName);
  ZR_RETURN_IF_ERROR(CheckpointFaultPoint("before_manifest", manifest));
  ZR_RETURN_IF_ERROR(WriteFileAtomically(manifest, ManifestToJson(m)));
  ZR_RETURN_IF_ERROR(CheckpointFaultPoint("before_latest", latest));
  ZR_RETURN_IF_ERROR(
      WriteFileAtomically(latest, absl::StrCat(step_name, "\n")));
  ZR_RETURN_IF_ERROR(CheckpointFaultPoint("after_latest", latest));
  return Retain(o.dir, o.keep_last, step_name);
}

// Every rank's shard size and CRC-32C, as each computed it while writing:
// a sum across ranks of 16-bit pieces (exact in fp32), each rank filling
// its own slots.
absl::StatusOr<std::vector<CheckpointFile>> GatherDigests(
    Engine& e, runtime::Runtime& rt, const io::FileDigest& mine) {
  constexpr int kPieces = 6;  // 4 for the size, 2 for the CRC
  std::vector<float> slots(kPieces * rt.world_size(), 0.0f);
  const uint64_t b = static_cast<uint64_t>(mine.bytes);
  const uint64_t words[kPieces] = {b,       b >> 16,     b >> 32,
                                   b >> 48, mine.crc32c, mine.crc32c >> 16};
  for (int i = 0; i < kPieces; ++i) {
    slots[kPieces * rt.rank() + i] = static_cast<float>(words[i] & 0xffff);
  }
  ZR_ASSIGN_OR_RETURN(const std::vector<float> sum,
                      e.SumAcrossRanks(slots, "checkpoint shard checksums"));
  std::vector<CheckpointFile> files(rt.world_size());
  for (int r = 0; r < rt.world_size(); ++r) {
    uint64_t v[kPieces];
    for (int i = 0; i < kPieces; ++i) {
      v[i] = static_cast<uint64_t>(sum[kPieces * r + i]);
    }
    files[r].rank = r;
    files[r].name = ShardFileName(r);
    files[r].bytes =
        static_cast<int64_t>(v[0] | v[1] << 16 | v[2] << 32 | v[3] << 48);
    files[r].crc32c = static_cast<uint32_t>(v[4] | v[5] << 16);
  }
  return files;
}

}  // namespace

CheckpointSaver::CheckpointSaver(Engine& engine, runtime::Runtime& rt,
                                 SaveOptions options)
    : engine_(engine), rt_(rt), options_(std::move(options)) {}

CheckpointSaver::~CheckpointSaver() {
  if (writer_.joinable()) writer_.join();
}

absl::Status CheckpointSaver::Start() {
  ZR_CHECK(!in_flight_) << "Finish the save in flight first";
  Pending p;
  p.step = engine_.steps_done();
  p.step_name = absl::StrCat(kStepDirPrefix, p.step);
  p.step_dir = absl::StrCat(options_.dir, "/", p.step_name);
  p.status =
      PrepareStepDirectory(options_.dir, p.step_dir, engine_.steps_done());
  if (p.status.ok()) {
    p.snapshot.state = std::move(spare_);
    p.status = engine_.ExportState(&p.snapshot.state);
  }
  if (p.status.ok()) p.status = CheckpointFaultPoint("snapshot", p.step_dir);
  p.snapshot.rank = rt_.rank();
  p.snapshot.world_size = rt_.world_size();
  p.snapshot.master_dtype = engine_.options().host_master_dtype;
  p.snapshot.moments_dtype = engine_.options().host_moments_dtype;
  p.snapshot.data = engine_.data_position();
  if (rt_.rank() == 0) p.manifest = MakeManifest(engine_, rt_, options_);
  pending_ = std::move(p);
  in_flight_ = true;
  done_ = false;
  if (!pending_.status.ok()) {
    done_ = true;
    return absl::OkStatus();
  }
  auto write = [this] {
    const std::string path = absl::StrCat(
        pending_.step_dir, "/", ShardFileName(pending_.snapshot.rank));
    pending_.status = WriteShardFile(pending_.snapshot, path, &pending_.digest);
    // The host copy is not needed now; its memory serves the next save.
    spare_ = std::move(pending_.snapshot.state);
    pending_.snapshot = ShardSnapshot();
    done_ = true;
  };
  if (options_.async) {
    writer_ = std::thread(write);
  } else {
    write();
  }
  return absl::OkStatus();
}

absl::StatusOr<SavedCheckpoint> CheckpointSaver::Poll() {
  if (!in_flight_) return SavedCheckpoint();
  ZR_ASSIGN_OR_RETURN(const int written,
                      engine_.CountRanks(done_, "checkpoint writes done"));
  if (written < rt_.world_size()) return SavedCheckpoint();
  return Finish();
}

absl::StatusOr<SavedCheckpoint> CheckpointSaver::Finish() {
  if (!in_flight_) return SavedCheckpoint();
  if (writer_.joinable()) writer_.join();
  in_flight_ = false;
  Pending p = std::move(pending_);
  ZR_ASSIGN_OR_RETURN(
      const int failed,
      engine_.CountRanks(!p.status.ok(), "checkpoint shards written"));
  if (!p.status.ok()) return p.status;
  if (failed > 0) {
    // Aborted: the failing rank's own error is the root cause.
    return absl::AbortedError(
        absl::StrCat(failed, " rank(s) could not write their shard of ",
                     p.step_dir, "; the previous checkpoint stays the latest"));
  }
  ZR_ASSIGN_OR_RETURN(std::vector<CheckpointFile> files,
                      GatherDigests(engine_, rt_, p.digest));
  const absl::Status published =
      rt_.rank() == 0 ? Publish(std::move(p.manifest), options_, p.step_dir,
                                p.step_name, std::move(files))
                      : absl::OkStatus();
  ZR_ASSIGN_OR_RETURN(
      const int unpublished,
      engine_.CountRanks(!published.ok(), "checkpoint published"));
  if (!published.ok()) return published;
  if (unpublished > 0) {
    return absl::AbortedError(
        absl::StrCat("rank 0 could not publish ", p.step_dir));
  }
  return SavedCheckpoint{p.step, p.step_dir};
}

absl::Status CheckSharedDirectory(Engine& engine, runtime::Runtime& rt,
                                  const std::string& dir) {
  if (rt.world_size() == 1 || !rt.computes_values()) return absl::OkStatus();
  // A token of two 24-bit halves (exact in the float all-reduce).
  std::vector<float> token = {0, 0};
  if (rt.rank() == 0) {
    std::random_device random;
    token = {static_cast<float>(random() & 0xffffff),
             static_cast<float>(random() & 0xffffff)};
  }
  ZR_ASSIGN_OR_RETURN(token, engine.SumAcrossRanks(token, "shared dir token"));
  const std::string text = absl::StrCat(static_cast<int64_t>(token[0]), ".",
                                        static_cast<int64_t>(token[1]));
  const std::string path = absl::StrCat(dir, "/.zero3_shared_check.", text);
  absl::Status written = absl::OkStatus();
  if (rt.rank() == 0) {
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      written = absl::FailedPreconditionError(absl::StrCat(
          "cannot create checkpoint directory ", dir, ": ", strerror(errno)));
    }
    if (written.ok()) {
      absl::StatusOr<std::unique_ptr<io::AtomicFile>> f =
          io::AtomicFile::Create(path);
      written = f.ok() ? (*f)->Write(text) : f.status();
      if (written.ok()) written = (*f)->Commit();
    }
  }
  ZR_ASSIGN_OR_RETURN(const int failed,
                      engine.CountRanks(!written.ok(), "shared dir written"));
  if (failed > 0) {
    return written.ok()
               ? absl::FailedPreconditionError(absl::StrCat(
                     "rank 0 cannot write in checkpoint directory ", dir))
               : written;
  }
  std::ifstream in(path);
  std::string seen;
  const bool sees = static_cast<bool>(in >> seen) && seen == text;
  ZR_ASSIGN_OR_RETURN(const int blind,
                      engine.CountRanks(!sees, "shared dir read"));
  if (rt.rank() == 0) std::remove(path.c_str());
  if (blind == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "checkpoint directory ", dir, ": ", blind, " of ", rt.world_size(),
      " ranks do not see the file rank 0 wrote there (this rank, ", rt.rank(),
      sees ? ", does" : ", does not",
      "); every rank writes its shard into it and rank 0 publishes the "
      "checkpoint, so it must be on a file system every node shares (NFS, "
      "Lustre, ...): point --save there"));
}

absl::StatusOr<std::string> SaveCheckpoint(Engine& engine, runtime::Runtime& rt,
                                           const SaveOptions& options) {
  SaveOptions blocking = options;
  blocking.async = false;
  CheckpointSaver saver(engine, rt, blocking);
  ZR_RETURN_IF_ERROR(saver.Start());
  ZR_ASSIGN_OR_RETURN(SavedCheckpoint saved, saver.Finish());
  return saved.dir;
}

}  // namespace engine
}  // namespace zero3
