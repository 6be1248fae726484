// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/data_flags.h"

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "testing/testdata/text/corpus.h"

namespace zero3 {
namespace cli {
namespace internal {

// Batches of held-out data an evaluation runs by default.
constexpr int64_t kDefaultEvalIters = 10;

void DataFlags::Define(FlagSet& flags) {
  flags.AddString("data", &data_, "corpus|synthetic|FILE",
                  "training data: the built-in corpus, seeded random "
                  "tokens, a token file (.bin; a Megatron PREFIX with "
                  ".bin and .idx, and with PREFIX.loss_mask.bin from "
                  "tools/data/prepare fine-tuning examples) or a text file "
                  "read as bytes (docs/data.md)");
  flags.AddString("data-dtype", &dtype_, "uint16|uint32",
                  "token ids' type in a flat --data file (default: uint16 "
                  "when the model's vocabulary fits in 16 bits, else "
                  "uint32); makes any --data file a token file");
  flags.AddBool("data-in-order", &in_order_,
                "token files: take samples in file order every epoch "
                "instead of a seeded permutation (to compare step by step "
                "with another trainer)");
  flags.AddString("data-packing", &packing_, "pad|pack|stream",
                  "a Megatron --data: pad puts one example per sample, "
                  "padded to --seq, and trains on its loss mask's tokens "
                  "(the default where PREFIX.loss_mask.bin exists); pack "
                  "puts as many examples in a sample as fit, each attending "
                  "only to itself with positions from 0; stream reads the "
                  "documents as one stream, every "
                  "token predicted");
  flags.AddBool("no-truncate", &no_truncate_,
                "with padded examples: an example longer than --seq + 1 "
                "tokens is an error instead of keeping its first --seq + 1");
  flags.AddString("eval-data", &eval_data_, "FILE",
                  "held-out data, read as --data is (its loss mask too): "
                  "forward passes every --eval-interval steps and at the "
                  "end print eval_loss and eval_ppl");
  flags.AddInt("eval-interval", &eval_interval_, "N",
               "with --eval-data: evaluate every N steps (default: only "
               "after the last step)",
               {0, 1000000000});
  flags.AddInt(
      "eval-iters", &eval_iters_, "N",
      absl::StrCat("with --eval-data: global batches per "
                   "evaluation (default ",
                   kDefaultEvalIters, ", fewer where the data has fewer)"),
      {0, 1000000});
}

absl::Status DataFlags::Check(bool data_mode) const {
  if (!file() &&
      (!dtype_.empty() || in_order_ || !packing_.empty() || no_truncate_)) {
    const char* flag = !dtype_.empty()     ? "--data-dtype"
                       : in_order_         ? "--data-in-order"
                       : !packing_.empty() ? "--data-packing"
                                           : "--no-truncate";
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " applies to token files, not --data ", data_));
  }
  if (!packing_.empty()) {
    ZR_RETURN_IF_ERROR(model::ParseDataPacking(packing_).status());
  }
  if (!evaluating() && (eval_interval_ > 0 || eval_iters_ > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(eval_interval_ > 0 ? "--eval-interval" : "--eval-iters",
                     " applies to --eval-data FILE: add it"));
  }
  if (evaluating() && !data_mode) {
    return absl::InvalidArgumentError(
        "--eval-data needs values: use --mode data (timing mode computes no "
        "loss; whatif costs evaluation with its own flags)");
  }
  return absl::OkStatus();
}

EvalPlan DataFlags::eval_plan() const {
  EvalPlan plan;
  if (!evaluating()) return plan;
  plan.interval = eval_interval_ > 0 ? eval_interval_ : 1000000000;
  plan.iters = eval_iters_ > 0 ? eval_iters_ : kDefaultEvalIters;
  return plan;
}

model::DataFileOptions DataFlags::FileOptions(int64_t vocab, int64_t seq,
                                              uint64_t seed) const {
  model::DataFileOptions o;
  o.dtype = dtype_;
  o.vocab = vocab;
  o.seq = seq;
  o.seed = seed;
  o.shuffle = !in_order_;
  o.truncate = !no_truncate_;
  // Check() parsed it.
  if (!packing_.empty()) o.packing = *model::ParseDataPacking(packing_);
  return o;
}

absl::StatusOr<std::unique_ptr<model::BatchSource>> DataFlags::Open(
    const std::string& resolved, int64_t vocab, int64_t seq,
    uint64_t seed) const {
  if (data_ == "synthetic") return model::SyntheticBatches(vocab, seed);
  if (data_ == "corpus") {
    return model::TextBatchesFromBytes(
        "built-in corpus",
        std::string(testdata::kCorpus, testdata::kCorpusSize), seq, seed);
  }
  return model::OpenDataFile(resolved, FileOptions(vocab, seq, seed));
}

absl::StatusOr<std::unique_ptr<model::BatchSource>> DataFlags::OpenEval(
    const std::string& resolved, int64_t vocab, int64_t seq) const {
  model::DataFileOptions o = FileOptions(vocab, seq, 0);
  o.shuffle = false;
  return model::OpenDataFile(resolved, o);
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
