// Copyright 2026 The zero3 Authors.
//
// corpus.h: testing/testdata/text/corpus.txt, compiled in.

#ifndef ZERO3_TESTING_TESTDATA_TEXT_CORPUS_H_
#define ZERO3_TESTING_TESTDATA_TEXT_CORPUS_H_

#include <cstddef>

namespace zero3 {
namespace testdata {

extern const char kCorpus[];
extern const size_t kCorpusSize;

}  // namespace testdata
}  // namespace zero3

#endif  // ZERO3_TESTING_TESTDATA_TEXT_CORPUS_H_
