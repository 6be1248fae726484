// Copyright 2026 The zero3 Authors.

#include "core/engine/checkpoint.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/engine/checkpoint_fault.h"
#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/kernels/dtype.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace engine {
namespace {

constexpr char kStepPrefix[] = "step_";
constexpr const char* kTensors[] = {"master", "exp_avg", "exp_avg_sq"};

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
  std::vector<io::TensorToWrite> tensors;
  for (int i = 0; i < 3; ++i) {
    io::TensorToWrite t;
    t.name = kTensors[i];
    t.shape = {static_cast<int64_t>(values[i]->size())};
    t.data = absl::string_view(reinterpret_cast<const char*>(values[i]->data()),
                               values[i]->size() * sizeof(float));
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

// The complete checkpoints in `dir`, by step, newest first.
std::vector<std::pair<int64_t, std::string>> CompleteCheckpoints(
    const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return found;
  while (const dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    int64_t step = 0;
    if (!absl::StartsWith(name, kStepPrefix) ||
        !absl::SimpleAtoi(name.substr(std::strlen(kStepPrefix)), &step) ||
        name != absl::StrCat(kStepPrefix, step)) {
      continue;
    }
    if (Exists(absl::StrCat(dir, "/", name, "/", kManifestName))) {
      found.emplace_back(step, name);
    }
  }
  closedir(d);
  std::sort(found.rbegin(), found.rend());
  return found;
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

absl::StatusOr<int64_t> MetaInt(const io::SafetensorsFile& f,
                                absl::string_view key) {
  for (const auto& [k, v] : f.metadata()) {
    int64_t out = 0;
    if (k == key && absl::SimpleAtoi(v, &out)) return out;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("checkpoint file ", f.path(),
                   ": __metadata__ has no integer '", key, "'"));
}

// A byte range of a shard file and where its floats go.
struct Extent {
  int64_t offset = 0;  // in the file
  int64_t bytes = 0;
  char* out = nullptr;
};

// The shard files a rank reads: each header opened on first use, the
// ranges wanted from it collected, then each file read once, start to end,
// its size and CRC-32C checked against the manifest as the ranges are
// copied out.
class ShardReader {
 public:
  ShardReader(const std::string& step_dir, const CheckpointManifest& m)
      : step_dir_(step_dir),
        m_(m),
        files_(m.files.size()),
        extents_(m.files.size()) {}

  // Asks for elements [first, first + n) of tensor `tensor` of `rank`'s
  // shard into `out` (filled by ReadAll).
  absl::Status Want(int rank, int tensor, int64_t first, int64_t n,
                    float* out) {
    ZR_ASSIGN_OR_RETURN(const io::SafetensorsFile* f, Open(rank));
    const io::TensorEntry& t = *f->Find(kTensors[tensor]);
    extents_[rank].push_back({f->data_offset() + t.begin + first * 4, n * 4,
                              reinterpret_cast<char*>(out)});
    return absl::OkStatus();
  }

  // Reads every file asked for, each once, and checks it.
  absl::Status ReadAll() {
    for (size_t r = 0; r < files_.size(); ++r) {
      if (files_[r] != nullptr) ZR_RETURN_IF_ERROR(ReadOne(r));
    }
    return absl::OkStatus();
  }

  // A file already opened (rank 0's, then read by ReadAll too, when none
  // is): where the counters, equal in every shard, are read.
  absl::StatusOr<const io::SafetensorsFile*> AnyOpen() {
    for (const auto& f : files_) {
      if (f != nullptr) return f.get();
    }
    return Open(0);
  }

 private:
  absl::StatusOr<const io::SafetensorsFile*> Open(int rank) {
    if (files_[rank] != nullptr) return files_[rank].get();
    struct stat st;
    if (stat(Path(rank).c_str(), &st) == 0 &&
        st.st_size != m_.files[rank].bytes) {
      // Truncated or replaced: said so before the header is parsed.
      return CheckFileDigest(Path(rank), {st.st_size, m_.files[rank].crc32c},
                             m_.files[rank]);
    }
    absl::StatusOr<std::unique_ptr<io::SafetensorsFile>> opened =
        io::SafetensorsFile::Open(Path(rank));
    if (!opened.ok()) {
      // A damaged header: the checksum names the cause when it differs.
      const absl::StatusOr<io::FileDigest> digest = ReadFileDigest(Path(rank));
      if (digest.ok()) {
        ZR_RETURN_IF_ERROR(
            CheckFileDigest(Path(rank), *digest, m_.files[rank]));
      }
      return opened.status();
    }
    files_[rank] = *std::move(opened);
    for (const char* name : kTensors) {
      const io::TensorEntry* t = files_[rank]->Find(name);
      if (t == nullptr || t->dtype != io::TensorDType::kF32 ||
          t->shape != std::vector<int64_t>{m_.partition_elements}) {
        return absl::InvalidArgumentError(absl::StrCat(
            "checkpoint file ", files_[rank]->path(), ": tensor '", name,
            "' is missing or not F32 [", m_.partition_elements, "]"));
      }
    }
    return files_[rank].get();
  }

  std::string Path(int rank) const {
    return absl::StrCat(step_dir_, "/", m_.files[rank].name);
  }

  absl::Status ReadOne(int rank) {
    std::vector<Extent>& want = extents_[rank];
    std::sort(want.begin(), want.end(), [](const Extent& a, const Extent& b) {
      return a.offset < b.offset;
    });
    size_t next = 0;  // the first extent not yet wholly copied
    auto copy = [&](int64_t at, absl::string_view piece) {
      const int64_t end = at + static_cast<int64_t>(piece.size());
      for (size_t i = next; i < want.size() && want[i].offset < end; ++i) {
        const Extent& x = want[i];
        const int64_t from = std::max(at, x.offset);
        const int64_t to = std::min(end, x.offset + x.bytes);
        if (from < to) {
          std::memcpy(x.out + (from - x.offset), piece.data() + (from - at),
                      to - from);
        }
        if (x.offset + x.bytes <= end && i == next) ++next;
      }
    };
    ZR_ASSIGN_OR_RETURN(const io::FileDigest digest,
                        ReadFileDigest(Path(rank), copy));
    return CheckFileDigest(Path(rank), digest, m_.files[rank]);
  }

  const std::string& step_dir_;
  const CheckpointManifest& m_;
  std::vector<std::unique_ptr<io::SafetensorsFile>> files_;
  std::vector<std::vector<Extent>> extents_;  // by rank
};

// The step counts and loss scaler of a shard's __metadata__.
absl::Status ReadCounters(const io::SafetensorsFile& f,
                          const CheckpointManifest& m, TrainingState* state) {
  ZR_ASSIGN_OR_RETURN(state->steps_done, MetaInt(f, "steps_done"));
  ZR_ASSIGN_OR_RETURN(state->adam_steps, MetaInt(f, "adam_steps"));
  ZR_ASSIGN_OR_RETURN(const int64_t hysteresis,
                      MetaInt(f, "loss_scale_cur_hysteresis"));
  state->scaler.cur_hysteresis = static_cast<int>(hysteresis);
  ZR_ASSIGN_OR_RETURN(state->scaler.iteration,
                      MetaInt(f, "loss_scale_iteration"));
  ZR_ASSIGN_OR_RETURN(state->scaler.last_overflow,
                      MetaInt(f, "loss_scale_last_overflow"));
  bool has_scale = false;
  for (const auto& [k, v] : f.metadata()) {
    if (k == "loss_scale")
      has_scale = absl::SimpleAtod(v, &state->scaler.scale);
  }
  if (!has_scale || state->steps_done != m.step) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint file ", f.path(), ": no loss_scale, or steps_done ",
        state->steps_done, " differs from the manifest's step ", m.step));
  }
  return absl::OkStatus();
}

// This rank's partitions under its own layout, read range by range from
// the shards that hold them: one shard when the ranks are as saved, parts
// of several when they are not. Padding stays zero.
absl::StatusOr<TrainingState> ReadPartitions(const zero::ShardLayout& layout,
                                             const std::string& step_dir,
                                             const CheckpointManifest& m) {
  if (static_cast<int>(m.params.size()) != layout.num_params()) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", step_dir, " has ", m.params.size(),
                     " parameters; the model has ", layout.num_params()));
  }
  ShardReader files(step_dir, m);
  TrainingState state;
  std::vector<float>* outs[] = {&state.master, &state.exp_avg,
                                &state.exp_avg_sq};
  for (std::vector<float>* out : outs) out->assign(layout.total(), 0.0f);
  for (int p = 0; p < layout.num_params(); ++p) {
    const zero::ParamShard& now = layout.param(p);
    const CheckpointParam& saved = m.params[p];
    if (saved.numel != now.numel || saved.partition <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint ", step_dir, ": parameter ", saved.name,
                       " has ", saved.numel, " elements (partition ",
                       saved.partition, "); the model's has ", now.numel));
    }
    const int64_t begin = layout.rank() * now.partition;
    const int64_t end = begin + layout.ValidElements(p);
    for (int64_t g = begin; g < end;) {
      const int q = static_cast<int>(g / saved.partition);
      const int64_t local = g % saved.partition;
      const int64_t n = std::min(end - g, saved.partition - local);
      for (int i = 0; i < 3; ++i) {
        ZR_RETURN_IF_ERROR(
            files.Want(q, i, saved.offset + local, n,
                       outs[i]->data() + now.offset + (g - begin)));
      }
      g += n;
    }
  }
  ZR_ASSIGN_OR_RETURN(const io::SafetensorsFile* any, files.AnyOpen());
  ZR_RETURN_IF_ERROR(files.ReadAll());
  ZR_RETURN_IF_ERROR(ReadCounters(*any, m, &state));
  return state;
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
  p.step_name = absl::StrCat(kStepPrefix, p.step);
  p.step_dir = absl::StrCat(options_.dir, "/", p.step_name);
  p.status =
      PrepareStepDirectory(options_.dir, p.step_dir, engine_.steps_done());
  if (p.status.ok()) {
    absl::StatusOr<TrainingState> state = engine_.ExportState();
    p.status = state.status();
    if (state.ok()) p.snapshot.state = *std::move(state);
  }
  if (p.status.ok()) p.status = CheckpointFaultPoint("snapshot", p.step_dir);
  p.snapshot.rank = rt_.rank();
  p.snapshot.world_size = rt_.world_size();
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
    pending_.snapshot = ShardSnapshot();  // the host copy is not needed now
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

absl::StatusOr<std::string> SaveCheckpoint(Engine& engine, runtime::Runtime& rt,
                                           const SaveOptions& options) {
  SaveOptions blocking = options;
  blocking.async = false;
  CheckpointSaver saver(engine, rt, blocking);
  ZR_RETURN_IF_ERROR(saver.Start());
  ZR_ASSIGN_OR_RETURN(SavedCheckpoint saved, saver.Finish());
  return saved.dir;
}

absl::Status LoadCheckpoint(Engine& engine, runtime::Runtime& rt,
                            const std::string& step_dir,
                            const CheckpointManifest& manifest) {
  const absl::StatusOr<TrainingState> state =
      ReadPartitions(engine.layout(), step_dir, manifest);
  ZR_ASSIGN_OR_RETURN(const int failed,
                      engine.CountRanks(!state.ok(), "checkpoint shards read"));
  if (!state.ok()) return state.status();
  if (failed > 0) {
    return absl::AbortedError(absl::StrCat(
        failed, " rank(s) could not read their shard of ", step_dir));
  }
  return engine.ImportState(*state);
}

absl::StatusOr<WholeState> ReadWholeState(const std::string& step_dir,
                                          const CheckpointManifest& manifest) {
  std::vector<int64_t> numels;
  for (const CheckpointParam& p : manifest.params) numels.push_back(p.numel);
  const zero::ShardLayout one(numels, 1, 0);
  ZR_ASSIGN_OR_RETURN(TrainingState flat,
                      ReadPartitions(one, step_dir, manifest));
  WholeState whole;
  const std::vector<float>* from[] = {&flat.master, &flat.exp_avg,
                                      &flat.exp_avg_sq};
  std::vector<std::vector<float>>* to[] = {&whole.master, &whole.exp_avg,
                                           &whole.exp_avg_sq};
  for (int p = 0; p < one.num_params(); ++p) {
    const zero::ParamShard& s = one.param(p);
    for (int i = 0; i < 3; ++i) {
      to[i]->emplace_back(from[i]->begin() + s.offset,
                          from[i]->begin() + s.offset + s.numel);
    }
  }
  flat.master.clear();
  flat.exp_avg.clear();
  flat.exp_avg_sq.clear();
  whole.counters = std::move(flat);
  return whole;
}

}  // namespace engine
}  // namespace zero3
