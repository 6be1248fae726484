// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/path_clash.h"

#include <sys/stat.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  const bool a_exists = ::stat(a.c_str(), &sa) == 0;
  const bool b_exists = ::stat(b.c_str(), &sb) == 0;
  if (a_exists && b_exists) {
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  std::error_code ea, eb;
  const std::filesystem::path na =
      std::filesystem::weakly_canonical(std::filesystem::absolute(a, ea), ea);
  const std::filesystem::path nb =
      std::filesystem::weakly_canonical(std::filesystem::absolute(b, eb), eb);
  if (ea || eb) return a == b;
  return na.lexically_normal() == nb.lexically_normal();
}

absl::Status Clash(const FlagPath& output, const FlagPath& other,
                   const char* what) {
  return absl::InvalidArgumentError(
      absl::StrCat(output.flag, " ", output.path, " is the same file as ",
                   other.flag, " ", other.path, ": writing it would ", what,
                   "; give ", output.flag, " another path"));
}

}  // namespace

absl::Status CheckNoClash(const std::vector<FlagPath>& inputs,
                          const std::vector<FlagPath>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const FlagPath& out = outputs[i];
    if (out.path.empty()) continue;
    for (const FlagPath& in : inputs) {
      if (!in.path.empty() && SameFile(out.path, in.path)) {
        return Clash(out, in, "destroy that input");
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (!outputs[j].path.empty() && SameFile(out.path, outputs[j].path)) {
        return Clash(out, outputs[j], "mix two outputs in one file");
      }
    }
  }
  return absl::OkStatus();
}

std::vector<FlagPath> DataFiles(const std::string& flag,
                                const std::string& path) {
  std::vector<FlagPath> files = {{flag, path}};
  if (path.empty()) return files;
  for (const char* suffix : {".bin", ".idx", ".loss_mask.bin"}) {
    files.push_back({flag, path + suffix});
  }
  return files;
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
