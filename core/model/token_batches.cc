// Copyright 2026 The zero3 Authors.

#include "core/model/token_batches.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/model/sample_order.h"

namespace zero3 {
namespace model {
namespace {

class Tokens : public BatchSource {
 public:
  Tokens(TokenStream stream, int64_t vocab, int64_t seq, uint64_t seed,
         bool shuffle)
      : stream_(std::move(stream)),
        vocab_(vocab),
        seq_(seq),
        order_((stream_.tokens() - 1) / seq, seed, shuffle) {}

  std::string description() const override {
    return absl::StrCat("token file ", stream_.path(), " (",
                        TokenDTypeName(stream_.dtype()), ", ", stream_.tokens(),
                        " tokens, ", order_.samples(), " samples of ", seq_,
                        "+1 tokens per epoch",
                        order_.shuffled() ? "" : ", in file order", ")");
  }
  // The ids are checked against this vocabulary as they are read.
  int64_t min_vocab() const override { return vocab_; }
  int64_t samples_per_epoch() const override { return order_.samples(); }

 protected:
  absl::Status Sample(int64_t n, int64_t seq, int32_t* out) const override {
    if (seq != seq_) {
      return absl::InvalidArgumentError(
          absl::StrCat(description(), " was opened for sequences of ", seq_,
                       " tokens, not ", seq));
    }
    const int64_t per_epoch = order_.samples();
    const int64_t k = order_.At(n / per_epoch, n % per_epoch);
    return stream_.Read(k * seq_, seq_ + 1, vocab_, out);
  }

 private:
  TokenStream stream_;
  int64_t vocab_;
  int64_t seq_;
  SampleOrder order_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BatchSource>> TokenBatches(TokenStream stream,
                                                          int64_t vocab,
                                                          int64_t seq,
                                                          uint64_t seed,
                                                          bool shuffle) {
  if (seq < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequences need at least 1 token, got --seq ", seq));
  }
  if (stream.tokens() < seq + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token file ", stream.path(), " holds ", stream.tokens(),
        " tokens, too few for one sample: --seq ", seq, " takes ", seq + 1,
        " tokens per sample; use a larger file or a smaller --seq"));
  }
  return std::unique_ptr<BatchSource>(
      std::make_unique<Tokens>(std::move(stream), vocab, seq, seed, shuffle));
}

}  // namespace model
}  // namespace zero3
