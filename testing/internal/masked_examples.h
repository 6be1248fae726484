// Copyright 2026 The zero3 Authors.
//
// masked_examples.h: fine-tuning examples for tests, written as
// tools/data/prepare writes them (a Megatron dataset and its loss mask) and
// opened as the engine opens them (document_batches.h).
//
// Example i has a seeded length from 2 to 2 * seq tokens (so some are
// padded and some truncated) and a seeded prompt of at least one token,
// unpredicted; the rest is the answer, predicted.

#ifndef ZERO3_TESTING_INTERNAL_MASKED_EXAMPLES_H_
#define ZERO3_TESTING_INTERNAL_MASKED_EXAMPLES_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/model/data.h"

namespace zero3 {
namespace testing {

// Writes `count` examples of ids below `vocab` under `name` in the test's
// temporary directory and opens them for sequences of `seq` tokens, in file
// order.
// With `pack`, several examples per sample (DocumentOptions::pack).
absl::StatusOr<std::unique_ptr<model::BatchSource>> MaskedExamples(
    const std::string& name, int64_t count, int64_t vocab, int64_t seq,
    uint64_t seed, bool pack = false);

}  // namespace testing
}  // namespace zero3

#endif  // ZERO3_TESTING_INTERNAL_MASKED_EXAMPLES_H_
