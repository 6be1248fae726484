// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/op_profile.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

#include "absl/strings/str_format.h"

namespace zero3 {
namespace cli {
namespace internal {

std::string OpKey(const std::string& label) {
  std::string key;
  for (size_t i = 0; i < label.size();) {
    if (std::isdigit(static_cast<unsigned char>(label[i]))) {
      while (i < label.size() &&
             std::isdigit(static_cast<unsigned char>(label[i]))) {
        ++i;
      }
      key += '#';
    } else {
      key += label[i++];
    }
  }
  return key;
}

std::vector<OpGroup> GroupOps(const std::vector<runtime::OpTiming>& ops,
                              int steps) {
  std::map<std::pair<std::string, std::string>, OpGroup> groups;
  const double per = 1.0 / std::max(1, steps);
  for (const runtime::OpTiming& op : ops) {
    const std::string key = OpKey(op.label);
    OpGroup& g = groups[{op.stream, key}];
    g.stream = op.stream;
    g.key = key;
    g.count += per;
    g.ms += per * static_cast<double>(op.end_ns - op.start_ns) / 1e6;
  }
  std::vector<OpGroup> out;
  for (auto& [k, g] : groups) out.push_back(std::move(g));
  std::sort(out.begin(), out.end(), [](const OpGroup& a, const OpGroup& b) {
    return a.ms != b.ms ? a.ms > b.ms
                        : std::tie(a.stream, a.key) < std::tie(b.stream, b.key);
  });
  return out;
}

std::string FormatOpComparison(const std::vector<OpGroup>& measured,
                               const std::vector<OpGroup>& predicted, int top) {
  std::map<std::pair<std::string, std::string>, const OpGroup*> by_key;
  for (const OpGroup& g : predicted) by_key[{g.stream, g.key}] = &g;
  std::string out =
      absl::StrFormat("  %-9s %-44s %7s %11s %11s %8s\n", "stream", "operation",
                      "n/step", "measured ms", "predicted", "error");
  double rest_measured = 0, rest_predicted = 0;
  int shown = 0;
  for (const OpGroup& g : measured) {
    auto it = by_key.find({g.stream, g.key});
    const OpGroup* p = it == by_key.end() ? nullptr : it->second;
    if (shown >= top) {
      rest_measured += g.ms;
      if (p != nullptr) rest_predicted += p->ms;
      continue;
    }
    ++shown;
    out += absl::StrFormat(
        "  %-9s %-44s %7.0f %11.3f %11s %8s\n", g.stream.substr(0, 9),
        g.key.substr(0, 44), g.count, g.ms,
        p == nullptr ? "-" : absl::StrFormat("%.3f", p->ms),
        p == nullptr || g.ms <= 0
            ? "-"
            : absl::StrFormat("%+.1f%%", 100.0 * (p->ms - g.ms) / g.ms));
  }
  if (shown < static_cast<int>(measured.size())) {
    out +=
        absl::StrFormat("  %-9s %-44s %7s %11.3f %11.3f\n", "",
                        "(everything else)", "", rest_measured, rest_predicted);
  }
  return out;
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
