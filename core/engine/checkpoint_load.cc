// Copyright 2026 The zero3 Authors.
//
// checkpoint_load.cc: the reading side of checkpoint.h - LoadCheckpoint
// (each rank's partitions, resharded when the ranks differ) and
// ReadWholeState (every parameter, for the reference trainer).

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/engine/checkpoint.h"
#include "core/io/safetensors.h"
#include "core/kernels/dtype.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace engine {
namespace {

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
  // shard into `out` (filled by ReadAll). A BF16 tensor (bf16 master
  // weights and optimizer states, saved as they are) is read into staging
  // and widened, exactly.
  absl::Status Want(int rank, int tensor, int64_t first, int64_t n,
                    float* out) {
    ZR_ASSIGN_OR_RETURN(const io::SafetensorsFile* f, Open(rank));
    const io::TensorEntry& t = *f->Find(kShardTensors[tensor]);
    const int64_t at = f->data_offset() + t.begin;
    if (t.dtype == io::TensorDType::kF32) {
      extents_[rank].push_back(
          {at + first * 4, n * 4, reinterpret_cast<char*>(out)});
      return absl::OkStatus();
    }
    widen_.push_back({std::vector<uint16_t>(n), out});
    extents_[rank].push_back(
        {at + first * 2, n * 2,
         reinterpret_cast<char*>(widen_.back().staged.data())});
    return absl::OkStatus();
  }

  // Reads every file asked for, each once, and checks it.
  absl::Status ReadAll() {
    for (size_t r = 0; r < files_.size(); ++r) {
      if (files_[r] != nullptr) ZR_RETURN_IF_ERROR(ReadOne(r));
    }
    for (const Widen& w : widen_) {
      kernels::BF16ToFloat(w.staged, absl::MakeSpan(w.out, w.staged.size()));
    }
    widen_.clear();
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
    for (const char* name : kShardTensors) {
      const io::TensorEntry* t = files_[rank]->Find(name);
      if (t == nullptr ||
          (t->dtype != io::TensorDType::kF32 &&
           t->dtype != io::TensorDType::kBF16) ||
          t->shape != std::vector<int64_t>{m_.partition_elements}) {
        return absl::InvalidArgumentError(absl::StrCat(
            "checkpoint file ", files_[rank]->path(), ": tensor '", name,
            "' is missing or not F32 or BF16 [", m_.partition_elements, "]"));
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
  // BF16 ranges read into `staged`, widened into `out` after.
  struct Widen {
    std::vector<uint16_t> staged;
    float* out;
  };
  std::deque<Widen> widen_;  // a deque: Extent::out points into it
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
  // The data position each shard records is the manifest's.
  ZR_ASSIGN_OR_RETURN(const int64_t epoch, MetaInt(f, "data_epoch"));
  ZR_ASSIGN_OR_RETURN(const int64_t index, MetaInt(f, "data_index"));
  if (epoch != m.data_position.epoch || index != m.data_position.index) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint file ", f.path(), ": data position (epoch ", epoch,
        ", index ", index, ") differs from the manifest's (epoch ",
        m.data_position.epoch, ", index ", m.data_position.index, ")"));
  }
  // The counters' ranges: applied steps are some of the steps taken, the
  // scaler's state is one it can be in.
  const zero::LossScaler::State& s = state->scaler;
  const char* bad =
      state->adam_steps < 0 || state->adam_steps > state->steps_done
          ? "adam_steps"
      : !(std::isfinite(s.scale) && s.scale > 0) ? "loss_scale"
      : s.cur_hysteresis < 0                     ? "loss_scale_cur_hysteresis"
      : s.iteration < 0                          ? "loss_scale_iteration"
      : s.last_overflow < -1 || s.last_overflow > s.iteration
          ? "loss_scale_last_overflow"
          : nullptr;
  if (bad != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint file ", f.path(), ": __metadata__ '", bad,
                     "' is out of range (adam_steps ", state->adam_steps,
                     " of ", state->steps_done, " steps, loss scale ", s.scale,
                     ", hysteresis ", s.cur_hysteresis, ", iteration ",
                     s.iteration, ", last overflow ", s.last_overflow, ")"));
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

}  // namespace

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
