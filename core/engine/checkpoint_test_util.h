// Copyright 2026 The zero3 Authors.
//
// checkpoint_test_util.h: what the checkpoint tests share: a fresh
// directory under the test's temporary directory, and the built-in corpus
// as batches.

#ifndef ZERO3_CORE_ENGINE_CHECKPOINT_TEST_UTIL_H_
#define ZERO3_CORE_ENGINE_CHECKPOINT_TEST_UTIL_H_

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/model/data.h"
#include "testing/testdata/text/corpus.h"

namespace zero3 {
namespace engine {

// TEST_TMPDIR/NAME (or /tmp/NAME), removed if it was there; not created.
inline std::string FreshTestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return dir;
}

// The built-in corpus in sequences of `seq` tokens, seed 3.
inline std::unique_ptr<model::BatchSource> CorpusBatches(int64_t seq) {
  return model::TextBatchesFromBytes(
             "corpus", std::string(testdata::kCorpus, testdata::kCorpusSize),
             seq, 3)
      .value();
}

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_CHECKPOINT_TEST_UTIL_H_
