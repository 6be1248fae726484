// Copyright 2026 The zero3 Authors.

#include "testing/internal/masked_examples.h"

#include <vector>

#include "core/model/document_batches.h"
#include "core/model/token_file_writer.h"
#include "core/util/random.h"

namespace zero3 {
namespace testing {

absl::StatusOr<std::unique_ptr<model::BatchSource>> MaskedExamples(
    const std::string& name, int64_t count, int64_t vocab, int64_t seq,
    uint64_t seed, bool pack) {
  constexpr uint64_t kLength = 1, kPrompt = 2, kToken = 3;
  std::vector<std::vector<int64_t>> examples;
  std::string mask;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t length = 2 + HashOf(seed, kLength, i) % (2 * seq - 1);
    const int64_t prompt = 1 + HashOf(seed, kPrompt, i) % (length - 1);
    std::vector<int64_t> ids;
    for (int64_t j = 0; j < length; ++j) {
      ids.push_back(HashOf(seed, kToken, i * 4 * seq + j) % vocab);
      mask.push_back(j < prompt ? 0 : 1);
    }
    examples.push_back(std::move(ids));
  }
  const std::string prefix = model::TempPath(name);
  model::WriteMegatronDataset(
      prefix, examples,
      vocab <= 65536 ? model::TokenDType::kUint16 : model::TokenDType::kInt32);
  model::WriteFileBytes(model::LossMaskPath(prefix), mask);
  model::DocumentOptions o;
  o.vocab = vocab;
  o.seq = seq;
  o.seed = seed;
  o.shuffle = false;
  o.pack = pack;
  return model::DocumentBatches(prefix, o);
}

}  // namespace testing
}  // namespace zero3
