// Copyright 2026 The zero3 Authors.

#include "tools/cli/flags.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/types/optional.h"
#include "core/config/json.h"
#include "core/util/check.h"
#include "core/util/key_value.h"
#include "core/util/suggest.h"

namespace zero3 {
namespace cli {
namespace {

// Wraps `text` to lines of at most `width` characters, each prefixed by
// `indent` spaces except the first.
std::string Wrap(absl::string_view text, size_t width, size_t indent) {
  std::string out;
  size_t column = 0;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (column > 0 && column + 1 + word.size() > width) {
      out.append("\n");
      out.append(indent, ' ');
      column = 0;
    } else if (column > 0) {
      out.push_back(' ');
      ++column;
    }
    out.append(word.data(), word.size());
    column += word.size();
  }
  return out;
}

// "-5", "-0.5": a negative number, which is a value, not a flag.
bool IsNegativeNumber(absl::string_view arg) {
  double d = 0;
  return arg.size() > 1 && arg[0] == '-' && absl::SimpleAtod(arg, &d);
}

// What ParseInteger returns for an integer beyond int64_t; never a valid
// value of a range that a flag states (the largest int64_t is excluded).
constexpr int64_t kOutOfInt64 = std::numeric_limits<int64_t>::min();

// `text` as an integer: decimal digits, or a number such as 5e8 or 8.0 that
// is integral (DeepSpeed configs write integers so). An integral number
// beyond int64_t is kOutOfInt64; anything else, nullopt.
absl::optional<int64_t> ParseInteger(absl::string_view text) {
  int64_t v = 0;
  if (absl::SimpleAtoi(text, &v)) return v;
  double d = 0;
  if (!absl::SimpleAtod(text, &d) || !std::isfinite(d) || std::floor(d) != d) {
    return absl::nullopt;
  }
  if (std::fabs(d) >= 9.2e18) return kOutOfInt64;
  return static_cast<int64_t>(d);
}

// "from 1 to 64", "at least 0", "at most 9", or "an integer".
std::string RangeText(const IntRange& range) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (range.min > kMin && range.max < kMax) {
    return absl::StrCat("from ", range.min, " to ", range.max);
  }
  if (range.min > kMin) return absl::StrCat("at least ", range.min);
  if (range.max < kMax) return absl::StrCat("at most ", range.max);
  return "an integer";
}

}  // namespace

FlagSet::FlagSet(std::string command, std::string description)
    : command_(std::move(command)), description_(std::move(description)) {}

void FlagSet::Add(Flag flag) {
  ZR_CHECK(!flag.name.empty() && flag.name[0] != '-')
      << "flag names are given without dashes: " << flag.name;
  ZR_CHECK(Find(flag.name) == nullptr) << "flag declared twice: " << flag.name;
  ZR_CHECK(flag.name != "help" && flag.name != "h") << "--help is built in";
  flag.section = section_;
  flags_.push_back(std::move(flag));
}

void FlagSet::Section(absl::string_view title) {
  section_ = std::string(title);
}

const FlagSet::Flag* FlagSet::Find(absl::string_view name) const {
  for (const Flag& flag : flags_) {
    if (flag.name == name) return &flag;
    for (const std::string& alias : flag.aliases) {
      if (alias == name) return &flag;
    }
  }
  return nullptr;
}

void FlagSet::AddAlias(absl::string_view name, absl::string_view alias) {
  ZR_CHECK(Find(alias) == nullptr) << "flag declared twice: " << alias;
  for (Flag& flag : flags_) {
    if (flag.name != name) continue;
    flag.aliases.emplace_back(alias);
    absl::StrAppend(&flag.help, " (also --", alias, ")");
    return;
  }
  ZR_CHECK(false) << "alias of an undeclared flag: " << name;
}

FlagSet::Flag* FlagSet::FindMutable(absl::string_view name) {
  return const_cast<Flag*>(Find(name));
}

void FlagSet::AddString(absl::string_view name, std::string* value,
                        absl::string_view value_name, absl::string_view help) {
  Flag flag;
  flag.name = std::string(name);
  flag.value_name = std::string(value_name);
  flag.help = std::string(help);
  flag.default_text = value->empty() ? "" : config::QuoteJsonString(*value);
  flag.set = [value](absl::string_view text) {
    // An empty value is always a mistake: an unset variable in a script.
    if (text.empty()) return std::string("expected a value, got \"\"");
    *value = std::string(text);
    return std::string();
  };
  Add(std::move(flag));
}

void FlagSet::AddInt(absl::string_view name, int64_t* value,
                     absl::string_view value_name, absl::string_view help,
                     IntRange range) {
  ZR_CHECK(range.min <= range.max) << "empty range for --" << name;
  Flag flag;
  flag.name = std::string(name);
  flag.value_name = std::string(value_name);
  flag.help = std::string(help);
  flag.default_text = absl::StrCat(*value);
  flag.range_text = RangeText(range);
  flag.set = [value, range](absl::string_view text) {
    absl::optional<int64_t> v = ParseInteger(text);
    if (!v.has_value()) {
      return absl::StrCat("expected an integer, found ",
                          config::QuoteJsonString(text));
    }
    if (*v == kOutOfInt64 || *v < range.min || *v > range.max) {
      return absl::StrCat("must be ", RangeText(range), ", got ",
                          config::QuoteJsonString(text));
    }
    *value = *v;
    return std::string();
  };
  Add(std::move(flag));
}

void FlagSet::SetDefaultText(absl::string_view name, absl::string_view text) {
  Flag* flag = FindMutable(name);
  ZR_CHECK(flag != nullptr) << "SetDefaultText before AddX: " << name;
  flag->default_text = std::string(text);
}

void FlagSet::AddDouble(absl::string_view name, double* value,
                        absl::string_view value_name, absl::string_view help) {
  Flag flag;
  flag.name = std::string(name);
  flag.value_name = std::string(value_name);
  flag.help = std::string(help);
  // As a person writes it: 10, 0.1, 1e-08 (not JSON's 1e1).
  flag.default_text = absl::StrCat(*value);
  flag.set = [value](absl::string_view text) {
    double d = 0;
    if (absl::SimpleAtod(text, &d) && std::isfinite(d)) {
      *value = d;
      return std::string();
    }
    return absl::StrCat("expected a number, found ",
                        config::QuoteJsonString(text));
  };
  Add(std::move(flag));
}

void FlagSet::AddBool(absl::string_view name, bool* value,
                      absl::string_view help) {
  Flag flag;
  flag.name = std::string(name);
  flag.help = std::string(help);
  flag.is_bool = true;
  flag.default_text = *value ? "true" : "false";
  flag.set = [value](absl::string_view text) {
    const std::string lower = absl::AsciiStrToLower(text);
    if (lower == "true" || lower == "1" || lower == "yes") {
      *value = true;
    } else if (lower == "false" || lower == "0" || lower == "no") {
      *value = false;
    } else {
      return absl::StrCat("expected true or false, found ",
                          config::QuoteJsonString(text));
    }
    return std::string();
  };
  Add(std::move(flag));
}

void FlagSet::AddRepeated(absl::string_view name,
                          std::vector<std::string>* values,
                          absl::string_view value_name,
                          absl::string_view help) {
  Flag flag;
  flag.name = std::string(name);
  flag.value_name = std::string(value_name);
  flag.help = std::string(help);
  flag.repeated = true;
  flag.set = [values](absl::string_view text) {
    values->push_back(std::string(text));
    return std::string();
  };
  Add(std::move(flag));
}

void FlagSet::AddPositional(absl::string_view name, absl::string_view help,
                            bool required) {
  ZR_CHECK(!required || positionals_.empty() || positionals_.back().required)
      << "a required positional after an optional one: " << name;
  positionals_.push_back(
      Positional{std::string(name), std::string(help), required});
}

void FlagSet::AddRemainingPositionals(absl::string_view name,
                                      std::vector<std::string>* values,
                                      absl::string_view help) {
  remaining_ = Positional{std::string(name), std::string(help), false};
  remaining_values_ = values;
}

std::string FlagSet::UnknownFlag(absl::string_view flag) const {
  std::vector<std::string> names = {"help"};
  for (const Flag& f : flags_) {
    names.push_back(f.name);
    if (f.is_bool) names.push_back(absl::StrCat("no-", f.name));
  }
  absl::string_view bare = flag;
  while (absl::ConsumePrefix(&bare, "-")) {
  }
  const std::string near = NearestName(bare, names);
  std::string message = absl::StrCat("unknown flag ", flag);
  if (!near.empty()) {
    absl::StrAppend(&message, "; did you mean --", near, "?");
  } else if (!absl::StartsWith(flag, "--")) {
    absl::StrAppend(&message, "; flags start with --");
  }
  absl::StrAppend(&message, " (", command_, " --help lists the flags)");
  return message;
}

absl::Status FlagSet::Parse(absl::Span<const std::string> args) {
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_done || arg == "-" || arg.empty() || arg[0] != '-' ||
        IsNegativeNumber(arg)) {
      positional_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      help_requested_ = true;
      return absl::OkStatus();
    }
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(UnknownFlag(arg));
    }
    absl::string_view body = absl::string_view(arg).substr(2);
    absl::string_view name = body;
    absl::string_view value;
    bool has_value = false;
    if (const absl::optional<KeyValue> kv = SplitKeyValue(body)) {
      name = kv->key;
      value = kv->value;
      has_value = true;
    }
    if (name == "help") {
      return absl::InvalidArgumentError(
          absl::StrCat("--help takes no value, got ", arg, " (", command_,
                       " --help prints the help)"));
    }
    const Flag* flag = Find(name);
    if (flag == nullptr && !has_value && absl::StartsWith(name, "no-")) {
      const Flag* negated = Find(name.substr(3));
      if (negated != nullptr && negated->is_bool) {
        ZR_CHECK(negated->set("false").empty());
        given_.push_back(negated->name);
        continue;
      }
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          UnknownFlag(has_value ? absl::StrCat("--", name) : arg));
    }
    given_.push_back(flag->name);
    if (flag->is_bool) {
      const std::string error = flag->set(has_value ? value : "true");
      if (!error.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag->name, ": ", error));
      }
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag->name, " needs a value: --", flag->name,
                         " ", flag->value_name));
      }
      value = args[++i];
    }
    const std::string error = flag->set(value);
    if (!error.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag->name, ": ", error));
    }
  }
  size_t required = 0;
  for (const Positional& p : positionals_) required += p.required ? 1 : 0;
  if (positional_.size() < required) {
    return absl::InvalidArgumentError(absl::StrCat(
        "missing argument ", positionals_[positional_.size()].name,
        " (usage: ", command_, " ",
        absl::StrJoin(
            positionals_, " ",
            [](std::string* out, const Positional& p) {
              out->append(p.required ? p.name : absl::StrCat("[", p.name, "]"));
            }),
        " [flags])"));
  }
  if (positional_.size() > positionals_.size() &&
      remaining_values_ != nullptr) {
    remaining_values_->assign(positional_.begin() + positionals_.size(),
                              positional_.end());
  } else if (positional_.size() > positionals_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument ",
        config::QuoteJsonString(positional_[positionals_.size()]),
        positionals_.empty()
            ? absl::StrCat(": ", command_, " takes no arguments")
            : absl::StrCat(
                  ": ", command_, " takes at most ", positionals_.size(),
                  positionals_.size() == 1 ? " argument" : " arguments")));
  }
  return absl::OkStatus();
}

bool FlagSet::given(absl::string_view name) const {
  return std::find(given_.begin(), given_.end(), name) != given_.end();
}

std::string FlagSet::Help() const {
  constexpr size_t kWidth = 80;
  std::string out = absl::StrCat("Usage: ", command_);
  for (const Positional& p : positionals_) {
    absl::StrAppend(&out, " ",
                    p.required ? p.name : absl::StrCat("[", p.name, "]"));
  }
  if (remaining_values_ != nullptr) {
    absl::StrAppend(&out, " [flags] [-- ", remaining_.name, "...]\n");
  } else {
    absl::StrAppend(&out, " [flags]\n");
  }
  if (!description_.empty()) {
    absl::StrAppend(&out, "\n", Wrap(description_, kWidth, 0), "\n");
  }
  // One column for names, wide enough for the longest. Rows of a section
  // follow its heading, sections in the order they were opened.
  struct Row {
    std::string section, left, right;
  };
  std::vector<Row> rows;
  for (const Flag& f : flags_) {
    std::string left = absl::StrCat("--", f.name);
    if (!f.is_bool) absl::StrAppend(&left, " ", f.value_name);
    std::string right = f.help;
    if (f.repeated) {
      absl::StrAppend(&right, " (repeatable)");
    } else if (f.is_bool) {
      // A switch that starts off needs no way to turn it off.
      if (f.default_text == "false") {
        absl::StrAppend(&right, " (default: off)");
      } else {
        absl::StrAppend(&right, " (default: ",
                        f.default_text == "true" ? "on" : f.default_text,
                        "; --no-", f.name, " turns it off)");
      }
    } else if (!f.range_text.empty() && f.range_text != "an integer") {
      absl::StrAppend(
          &right, " (", f.range_text,
          f.default_text.empty() ? "" : "; default: ", f.default_text, ")");
    } else if (!f.default_text.empty()) {
      absl::StrAppend(&right, " (default: ", f.default_text, ")");
    }
    rows.push_back({f.section, std::move(left), std::move(right)});
  }
  // --help with the flags of no section.
  auto first_sectioned =
      std::find_if(rows.begin(), rows.end(),
                   [](const Row& r) { return !r.section.empty(); });
  rows.insert(first_sectioned, {"", "-h, --help", "print this help and exit"});
  std::vector<std::string> order = {""};  // sections as first declared
  for (const Row& r : rows) {
    if (std::find(order.begin(), order.end(), r.section) == order.end()) {
      order.push_back(r.section);
    }
  }
  const auto rank = [&](const std::string& section) {
    return std::find(order.begin(), order.end(), section) - order.begin();
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    return rank(a.section) < rank(b.section);
  });
  size_t name_width = 0;
  std::vector<Positional> arguments = positionals_;
  if (remaining_values_ != nullptr) arguments.push_back(remaining_);
  for (const Positional& p : arguments) {
    name_width = std::max(name_width, p.name.size());
  }
  for (const Row& row : rows) {
    name_width = std::max(name_width, row.left.size());
  }
  const size_t indent = 2 + name_width + 2;
  if (!arguments.empty()) {
    absl::StrAppend(&out, "\nArguments:\n");
    for (const Positional& p : arguments) {
      absl::StrAppend(&out, "  ", p.name,
                      std::string(name_width - p.name.size() + 2, ' '),
                      Wrap(p.help, kWidth - indent, indent), "\n");
    }
  }
  absl::StrAppend(&out, "\nFlags:\n");
  std::string section;
  for (const Row& row : rows) {
    if (row.section != section) {
      section = row.section;
      absl::StrAppend(&out, "\n", section, ":\n");
    }
    absl::StrAppend(&out, "  ", row.left,
                    std::string(name_width - row.left.size() + 2, ' '),
                    Wrap(row.right, kWidth - indent, indent), "\n");
  }
  return out;
}

}  // namespace cli
}  // namespace zero3
