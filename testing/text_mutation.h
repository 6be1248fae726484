// Copyright 2026 The zero3 Authors.
//
// text_mutation.h: the mutations the parsers' fuzz tests apply to their
// sample inputs.

#ifndef ZERO3_TESTING_TEXT_MUTATION_H_
#define ZERO3_TESTING_TEXT_MUTATION_H_

#include <random>
#include <string>
#include <vector>

namespace zero3 {
namespace testing {

// `text` after 1 to 4 random edits drawn from `rng`: a byte flipped, a
// range deleted or duplicated, or one of `tokens` inserted (the likeliest).
inline std::string MutateText(std::string text,
                              const std::vector<std::string>& tokens,
                              std::mt19937_64& rng) {
  auto pick = [&](size_t n) {
    return n == 0 ? size_t{0}
                  : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  };
  const int mutations = 1 + static_cast<int>(pick(4));
  for (int m = 0; m < mutations; ++m) {
    const size_t pos = pick(text.size() + 1);
    switch (pick(5)) {
      case 0:  // flip a byte
        if (!text.empty()) {
          text[pick(text.size())] = static_cast<char>(pick(256));
        }
        break;
      case 1: {  // delete a range
        const size_t len = pick(16) + 1;
        if (pos < text.size()) text.erase(pos, len);
        break;
      }
      case 2: {  // duplicate a range
        if (text.empty()) break;
        const size_t from = pick(text.size());
        const size_t len = pick(64) + 1;
        text.insert(pos, text.substr(from, len));
        break;
      }
      default:  // insert a token
        text.insert(pos, tokens[pick(tokens.size())]);
        break;
    }
  }
  return text;
}

}  // namespace testing
}  // namespace zero3

#endif  // ZERO3_TESTING_TEXT_MUTATION_H_
