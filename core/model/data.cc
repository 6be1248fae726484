// Copyright 2026 The zero3 Authors.

#include "core/model/data.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/util/check.h"
#include "core/util/random.h"
#include "core/util/regular_file.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace model {
namespace {

constexpr uint64_t kTokenStream = 0x746f6b656e;     // "token"
constexpr uint64_t kOffsetStream = 0x6f6666736574;  // "offset"

class Synthetic : public BatchSource {
 public:
  Synthetic(int64_t vocab, uint64_t seed) : vocab_(vocab), seed_(seed) {}
  std::string description() const override {
    return absl::StrCat("synthetic tokens (vocab ", vocab_, ", seed ", seed_,
                        ")");
  }
  int64_t min_vocab() const override { return vocab_; }

 protected:
  absl::Status Sample(int64_t n, int64_t seq, int32_t* out) const override {
    for (int64_t i = 0; i <= seq; ++i) {
      out[i] = static_cast<int32_t>(
          HashOf(seed_, kTokenStream, n * (seq + 1) + i) % vocab_);
    }
    return absl::OkStatus();
  }

 private:
  int64_t vocab_;
  uint64_t seed_;
};

class Text : public BatchSource {
 public:
  Text(std::string path, std::string bytes, uint64_t seed)
      : path_(std::move(path)), bytes_(std::move(bytes)), seed_(seed) {}
  std::string description() const override {
    return absl::StrCat("text file ", path_, " (", bytes_.size(), " bytes)");
  }
  int64_t min_vocab() const override { return 256; }

 protected:
  absl::Status Sample(int64_t n, int64_t seq, int32_t* out) const override {
    const uint64_t windows = bytes_.size() - seq;
    const uint64_t start = HashOf(seed_, kOffsetStream, n) % windows;
    for (int64_t i = 0; i <= seq; ++i) {
      out[i] = static_cast<unsigned char>(bytes_[start + i]);
    }
    return absl::OkStatus();
  }

 private:
  std::string path_;
  std::string bytes_;
  uint64_t seed_;
};

int64_t GlobalBatch(const BatchShape& shape) {
  return shape.batch * shape.world * shape.accumulation;
}

}  // namespace

absl::Status BatchSource::SampleTargets(int64_t n, int64_t seq, int32_t* tokens,
                                        int32_t* targets) const {
  std::vector<int32_t> window(seq + 1);
  ZR_RETURN_IF_ERROR(Sample(n, seq, window.data()));
  std::copy(window.begin(), window.end() - 1, tokens);
  std::copy(window.begin() + 1, window.end(), targets);
  return absl::OkStatus();
}

absl::Status BatchSource::SamplePositions(int64_t, int64_t seq,
                                          int32_t* positions) const {
  for (int64_t i = 0; i < seq; ++i) positions[i] = static_cast<int32_t>(i);
  return absl::OkStatus();
}

absl::Status BatchSource::Fill(const BatchShape& shape, int64_t step, int micro,
                               int rank, std::vector<int32_t>* tokens,
                               std::vector<int32_t>* targets,
                               std::vector<int32_t>* positions) const {
  tokens->resize(shape.batch * shape.seq);
  targets->resize(shape.batch * shape.seq);
  if (positions != nullptr) positions->resize(shape.batch * shape.seq);
  for (int64_t b = 0; b < shape.batch; ++b) {
    const int64_t n =
        start_ +
        ((step * shape.accumulation + micro) * shape.world + rank) *
            shape.batch +
        b;
    if (n < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "step ", step, " comes before the data position set for this run"));
    }
    ZR_RETURN_IF_ERROR(SampleTargets(n, shape.seq,
                                     tokens->data() + b * shape.seq,
                                     targets->data() + b * shape.seq));
    if (positions != nullptr) {
      ZR_RETURN_IF_ERROR(
          SamplePositions(n, shape.seq, positions->data() + b * shape.seq));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> BatchSource::PredictedTargets(const BatchShape& shape,
                                                      int64_t step) const {
  if (!masks_targets()) {
    return GlobalBatch(shape) * shape.seq;
  }
  int64_t count = 0;
  std::vector<int32_t> tokens, targets;
  for (int micro = 0; micro < shape.accumulation; ++micro) {
    for (int rank = 0; rank < shape.world; ++rank) {
      ZR_RETURN_IF_ERROR(Fill(shape, step, micro, rank, &tokens, &targets));
      for (int32_t t : targets) count += t != -1 ? 1 : 0;
    }
  }
  return count;
}

DataPosition BatchSource::PositionAt(const BatchShape& shape,
                                     int64_t step) const {
  const int64_t n = start_ + step * GlobalBatch(shape);
  ZR_CHECK_GE(n, 0);
  const int64_t per_epoch = samples_per_epoch();
  if (per_epoch == 0) return DataPosition{0, n};
  return DataPosition{n / per_epoch, n % per_epoch};
}

absl::Status BatchSource::SetPosition(const BatchShape& shape, int64_t step,
                                      const DataPosition& position) {
  const int64_t per_epoch = samples_per_epoch();
  const bool inside =
      position.epoch >= 0 && position.index >= 0 &&
      (per_epoch == 0 ? position.epoch == 0 : position.index < per_epoch);
  if (!inside || step < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data position (epoch ", position.epoch, ", index ", position.index,
        ") at step ", step, " is outside ", description(), ", which has ",
        per_epoch == 0 ? std::string("no epochs")
                       : absl::StrCat(per_epoch, " samples per epoch"),
        "; was it saved with other data or another --seq?"));
  }
  start_ =
      position.epoch * per_epoch + position.index - step * GlobalBatch(shape);
  return absl::OkStatus();
}

double MicroBatchLossDivisor(const BatchSource& data, const BatchShape& shape,
                             int64_t predicted) {
  if (!data.masks_targets()) return 0.0;
  return static_cast<double>(std::max<int64_t>(predicted, 1)) /
         (static_cast<double>(shape.world) * shape.accumulation);
}

std::unique_ptr<BatchSource> SyntheticBatches(int64_t vocab, uint64_t seed) {
  return std::make_unique<Synthetic>(vocab, seed);
}

absl::StatusOr<std::unique_ptr<BatchSource>> TextBatches(
    const std::string& path, int64_t seq, uint64_t seed) {
  const absl::Status regular = CheckRegularFile(path);
  if (absl::IsInvalidArgument(regular)) {
    return absl::InvalidArgumentError(
        absl::StrCat("data file: ", regular.message()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    return absl::NotFoundError(absl::StrCat(
        "cannot read data file ", path, ": ",
        error != 0 ? std::strerror(error) : "cannot open",
        "; --data takes corpus, synthetic, a token file, a Megatron prefix "
        "or a text file (docs/data.md)"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return TextBatchesFromBytes(path, ss.str(), seq, seed);
}

absl::StatusOr<std::unique_ptr<BatchSource>> TextBatchesFromBytes(
    const std::string& name, std::string bytes, int64_t seq, uint64_t seed) {
  if (static_cast<int64_t>(bytes.size()) < seq + 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data ", name, " has ", bytes.size(), " bytes; sequences of ", seq,
        " tokens need at least ", seq + 2));
  }
  return std::unique_ptr<BatchSource>(
      std::make_unique<Text>(name, std::move(bytes), seed));
}

}  // namespace model
}  // namespace zero3
