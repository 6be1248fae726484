// Copyright 2026 The zero3 Authors.

#include "core/model/document_batches.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model/megatron_index.h"
#include "core/model/sample_order.h"
#include "core/model/token_stream.h"
#include "core/util/mapped_file.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace model {
namespace {

// What the open found in the files.
struct DocumentCounts {
  int64_t documents = 0;
  int64_t tokens = 0;
  int64_t predicted = 0;
  int64_t truncated = 0;  // examples longer than seq + 1
  // Predicted tokens left as targets after truncation, and the examples
  // whose every predicted token truncation cut off.
  int64_t kept = 0;
  int64_t emptied = 0;
};

class Documents : public BatchSource {
 public:
  // `packs`: where each sample's examples start (examples
  // packs[k] .. packs[k + 1] - 1; one each when not packing), then the
  // number of examples.
  Documents(std::string prefix, TokenStream stream, std::vector<int64_t> starts,
            MappedFile mask, const DocumentOptions& o,
            const DocumentCounts& counts, std::vector<int64_t> packs)
      : prefix_(std::move(prefix)),
        stream_(std::move(stream)),
        starts_(std::move(starts)),
        mask_(std::move(mask)),
        vocab_(o.vocab),
        seq_(o.seq),
        pack_(o.pack),
        counts_(counts),
        packs_(std::move(packs)),
        order_(static_cast<int64_t>(packs_.size()) - 1, o.seed, o.shuffle) {}

  std::string description() const override {
    return absl::StrCat(
        "fine-tuning examples ", prefix_, " (", counts_.documents,
        " examples, ", counts_.predicted, " of ", counts_.tokens,
        " tokens predicted, ",
        pack_ ? absl::StrCat("packed into ", order_.samples(),
                             " samples of up to ", seq_,
                             " tokens, attention within each example")
              : absl::StrCat("one example per sample padded to ", seq_),
        counts_.truncated > 0
            ? absl::StrCat(
                  ", ", counts_.truncated, " truncated to ", seq_ + 1,
                  " tokens, keeping ", counts_.kept, " predicted tokens",
                  counts_.emptied > 0 ? absl::StrCat("; ", counts_.emptied,
                                                     " lose all of theirs")
                                      : "")
            : "",
        order_.shuffled() ? "" : ", in file order", ")");
  }
  int64_t min_vocab() const override { return vocab_; }
  int64_t samples_per_epoch() const override { return order_.samples(); }
  bool masks_targets() const override { return true; }
  bool packs() const override { return pack_; }

 protected:
  absl::Status Sample(int64_t, int64_t, int32_t*) const override {
    return absl::InternalError("fine-tuning examples are read with targets");
  }
  absl::Status SampleTargets(int64_t n, int64_t seq, int32_t* tokens,
                             int32_t* targets) const override {
    return Write(n, seq, tokens, targets, nullptr);
  }
  absl::Status SamplePositions(int64_t n, int64_t seq,
                               int32_t* positions) const override {
    return Write(n, seq, nullptr, nullptr, positions);
  }

 private:
  // Sample n's rows, its examples one after another: an example of L
  // tokens (at most seq + 1 kept) takes L - 1 rows packed (its last token
  // is only a target), min(L, seq) alone; input j is token j, its target
  // token j + 1 where predicted, its position j. Padding after them: token
  // 0, no target, positions from 0 again. Null outputs are skipped.
  absl::Status Write(int64_t n, int64_t seq, int32_t* tokens, int32_t* targets,
                     int32_t* positions) const {
    if (seq != seq_) {
      return absl::InvalidArgumentError(
          absl::StrCat(description(), " was opened for sequences of ", seq_,
                       " tokens, not ", seq));
    }
    const int64_t per_epoch = order_.samples();
    const int64_t k = order_.At(n / per_epoch, n % per_epoch);
    int64_t row = 0;
    std::vector<int32_t> ids;
    for (int64_t doc = packs_[k]; doc < packs_[k + 1]; ++doc) {
      const int64_t first = starts_[doc];
      const int64_t length = std::min(starts_[doc + 1] - first, seq + 1);
      const int64_t rows =
          pack_ ? std::max<int64_t>(length - 1, 0) : std::min(length, seq);
      if (tokens != nullptr) {
        ids.assign(std::max<int64_t>(length, 1), 0);
        ZR_RETURN_IF_ERROR(stream_.Read(first, length, vocab_, ids.data()));
      }
      const uint8_t* predicted = mask_.data() + first;
      for (int64_t j = 0; j < rows; ++j, ++row) {
        if (tokens != nullptr) {
          tokens[row] = ids[j];
          targets[row] =
              j + 1 < length && predicted[j + 1] != 0 ? ids[j + 1] : -1;
        }
        if (positions != nullptr) positions[row] = static_cast<int32_t>(j);
      }
    }
    for (int64_t pad = row; row < seq; ++row) {
      if (tokens != nullptr) {
        tokens[row] = 0;
        targets[row] = -1;
      }
      if (positions != nullptr)
        positions[row] = static_cast<int32_t>(row - pad);
    }
    return absl::OkStatus();
  }

  std::string prefix_;
  TokenStream stream_;
  std::vector<int64_t> starts_;
  MappedFile mask_;
  int64_t vocab_;
  int64_t seq_;
  bool pack_;
  DocumentCounts counts_;
  std::vector<int64_t> packs_;
  SampleOrder order_;
};

// Where each sample's examples start: one example each, or packed in file
// order, each sample taking examples while their rows (L - 1 of an example
// of L tokens, at most seq) fit in seq; the example count last.
std::vector<int64_t> PackStarts(const std::vector<int64_t>& starts,
                                int64_t documents, int64_t seq, bool pack) {
  std::vector<int64_t> packs = {0};
  int64_t rows = 0;
  for (int64_t d = 0; d < documents; ++d) {
    if (!pack) {
      packs.push_back(d + 1);
      continue;
    }
    const int64_t length = std::min(starts[d + 1] - starts[d], seq + 1);
    const int64_t need = std::max<int64_t>(length - 1, 0);
    if (rows + need > seq && rows > 0) {
      packs.push_back(d);
      rows = 0;
    }
    rows += need;
  }
  if (pack) packs.push_back(documents);
  return packs;
}

// Checks every mask byte; counts the predicted tokens.
absl::StatusOr<int64_t> CountPredicted(const MappedFile& mask) {
  int64_t predicted = 0;
  for (int64_t i = 0; i < mask.size(); ++i) {
    const uint8_t b = mask.data()[i];
    if (b > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          mask.path(), ": byte ", i, " is ", static_cast<int>(b),
          "; a loss mask holds 0 (not predicted) or 1 (predicted) per token "
          "(rewrite it with tools/data/prepare)"));
    }
    predicted += b;
  }
  return predicted;
}

}  // namespace

std::string LossMaskPath(const std::string& prefix) {
  return prefix + ".loss_mask.bin";
}

absl::StatusOr<std::unique_ptr<BatchSource>> DocumentBatches(
    const std::string& prefix, const DocumentOptions& o) {
  if (o.seq < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequences need at least 1 token, got --seq ", o.seq));
  }
  MegatronIndex index;
  ZR_ASSIGN_OR_RETURN(TokenStream stream, OpenMegatronTokens(prefix, &index));
  const std::string mask_path = LossMaskPath(prefix);
  ZR_ASSIGN_OR_RETURN(MappedFile mask, MappedFile::Open(mask_path));
  if (mask.size() != index.tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        mask_path, " has ", mask.size(), " bytes; ", prefix, ".bin holds ",
        index.tokens,
        " tokens and its loss mask one byte per token (were they written "
        "together by tools/data/prepare?)"));
  }
  DocumentCounts counts;
  counts.documents = index.sequences;
  counts.tokens = index.tokens;
  ZR_ASSIGN_OR_RETURN(counts.predicted, CountPredicted(mask));
  if (counts.documents < 1 || counts.predicted == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, " has ", counts.documents, " examples and predicts ",
        counts.predicted, " tokens: nothing to train on (is ", mask_path,
        " all zeros?)"));
  }
  int64_t longest = 0;
  for (int64_t d = 0; d < counts.documents; ++d) {
    const int64_t first = index.sequence_starts[d];
    const int64_t length = index.sequence_starts[d + 1] - first;
    longest = std::max(longest, length);
    // Targets are tokens 1 .. min(length, seq + 1) - 1 of the example.
    const uint8_t* m = mask.data() + first;
    int64_t all = 0, kept = 0;
    for (int64_t j = 1; j < length; ++j) {
      all += m[j];
      if (j <= o.seq) kept += m[j];
    }
    counts.kept += kept;
    if (all > 0 && kept == 0) ++counts.emptied;
    if (length <= o.seq + 1) continue;
    if (!o.truncate) {
      return absl::InvalidArgumentError(absl::StrCat(
          prefix, ": example ", d, " has ", length, " tokens, more than --seq ",
          o.seq, " + 1; raise --seq to ", length - 1,
          " or drop --no-truncate to keep its first ", o.seq + 1, " tokens"));
    }
    ++counts.truncated;
  }
  if (counts.kept == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, ": with --seq ", o.seq,
        " truncation cuts off every predicted token (the examples are up to ",
        longest, " tokens, their answers at the end); raise --seq to ",
        longest - 1));
  }
  std::vector<int64_t> packs =
      PackStarts(index.sequence_starts, counts.documents, o.seq, o.pack);
  return std::unique_ptr<BatchSource>(std::make_unique<Documents>(
      prefix, std::move(stream), std::move(index.sequence_starts),
      std::move(mask), o, counts, std::move(packs)));
}

}  // namespace model
}  // namespace zero3
