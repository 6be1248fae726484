// Copyright 2026 The zero3 Authors.
//
// data_flags.h: zero3 train's data flags (--data, --data-dtype,
// --data-in-order, --data-packing, --no-truncate; the held-out
// --eval-data, --eval-interval, --eval-iters; docs/data.md) and the
// sources they open.
//
//   DataFlags data;
//   data.Define(flags);                              // in DefineFlags
//   ZR_RETURN_IF_ERROR(data.Check(data_mode));       // with the other flags
//   ZR_ASSIGN_OR_RETURN(auto source, data.Open(resolved, vocab, seq, seed));
//
// Not thread-safe: the flag parser writes the members; the const methods
// may be called from every rank.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_DATA_FLAGS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_DATA_FLAGS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/model/data.h"
#include "core/model/data_file.h"
#include "tools/cli/flags.h"

namespace zero3 {
namespace cli {
namespace internal {

// When and how much a run evaluates.
struct EvalPlan {
  int64_t interval = 0;  // every N steps and after the last; 0: never
  int64_t iters = 0;     // global batches per evaluation
  bool Due(int64_t steps_done, int64_t steps) const {
    return interval > 0 && (steps_done % interval == 0 || steps_done == steps);
  }
};

class DataFlags {
 public:
  // Adds the flags, as one block.
  void Define(FlagSet& flags);

  // The flags' combinations: a token file's flags with a built-in source,
  // a --data-packing name, evaluation flags without --eval-data or in
  // timing mode (`data_mode` false); InvalidArgument naming the flag.
  absl::Status Check(bool data_mode) const;

  const std::string& data() const { return data_; }
  bool corpus() const { return data_ == "corpus"; }
  // --data names a file (neither built-in source).
  bool file() const { return data_ != "corpus" && data_ != "synthetic"; }
  bool evaluating() const { return !eval_data_.empty(); }
  const std::string& eval_data() const { return eval_data_; }
  EvalPlan eval_plan() const;

  // The training data: the built-in corpus, synthetic tokens, or the file
  // at `resolved` (--data resolved by the caller) by core/model/data_file's
  // rule, for a model of `vocab` tokens.
  absl::StatusOr<std::unique_ptr<model::BatchSource>> Open(
      const std::string& resolved, int64_t vocab, int64_t seq,
      uint64_t seed) const;
  // The held-out data at `resolved` (--eval-data resolved), read as --data
  // is, in file order.
  absl::StatusOr<std::unique_ptr<model::BatchSource>> OpenEval(
      const std::string& resolved, int64_t vocab, int64_t seq) const;

 private:
  model::DataFileOptions FileOptions(int64_t vocab, int64_t seq,
                                     uint64_t seed) const;

  std::string data_ = "corpus";
  std::string dtype_;
  bool in_order_ = false;
  std::string packing_;
  bool no_truncate_ = false;
  std::string eval_data_;
  int64_t eval_interval_ = 0;
  int64_t eval_iters_ = 0;
};

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_DATA_FLAGS_H_
