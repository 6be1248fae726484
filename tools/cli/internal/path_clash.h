// Copyright 2026 The zero3 Authors.
//
// path_clash.h: before a command opens anything for writing, checks that
// none of its outputs is one of its inputs or another of its outputs, so
// that `--metrics d.bin` cannot truncate the data it trains on.
//
//   ZR_RETURN_IF_ERROR(CheckNoClash({{"--data", data}, {"--config", cfg}},
//                                   {{"--metrics", metrics}}));
//
// Two paths are the same file where both exist and share device and inode
// (hard links, symlinks, ./x and x alike), or where their absolute, normal
// forms are equal (a file not written yet). Errors are InvalidArgumentError
// (exit status 2) naming both flags and the path.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_PATH_CLASH_H_
#define ZERO3_TOOLS_CLI_INTERNAL_PATH_CLASH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace zero3 {
namespace cli {
namespace internal {

// A path a command was given, and the flag that gave it.
struct FlagPath {
  std::string flag;
  std::string path;
};

// Fails where an output is an input, or two outputs are one file. Empty
// paths are skipped.
absl::Status CheckNoClash(const std::vector<FlagPath>& inputs,
                          const std::vector<FlagPath>& outputs);

// The files a --data or --eval-data value may read: the path, and for a
// Megatron prefix its .bin, .idx and loss mask.
std::vector<FlagPath> DataFiles(const std::string& flag,
                                const std::string& path);

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_PATH_CLASH_H_
