// Copyright 2026 The zero3 Authors.
//
// staged_directory.h: writes a set of files into a directory so that a
// failure part way leaves the directory as it was.
//
//   ZR_ASSIGN_OR_RETURN(auto staged, StagedDirectory::Create(out, replace));
//   ... write files under staged->staging() ...
//   ZR_RETURN_IF_ERROR(staged->Publish(is_ours));
//
// The files go to a staging folder beside the directory (same file system).
// Publish renames the folder to the directory where that is missing or
// empty; else it removes the directory's files `stale` names (left by an
// earlier write of the same kind) and renames each staged file over its
// name. Destroying a StagedDirectory that was not published removes the
// staging folder. Not thread-safe.

#ifndef ZERO3_CORE_IO_STAGED_DIRECTORY_H_
#define ZERO3_CORE_IO_STAGED_DIRECTORY_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zero3 {
namespace io {

class StagedDirectory {
 public:
  // Checks `dir`: missing (its parent must exist), empty, or, with
  // `replace`, holding anything; not a file. InvalidArgument naming the
  // directory, a few of its entries and the fix otherwise. Then creates the
  // staging folder.
  static absl::StatusOr<std::unique_ptr<StagedDirectory>> Create(
      const std::string& dir, bool replace);
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  // Where to write the files.
  const std::string& staging() const { return staging_; }

  // Moves the staged files into the directory. `stale(name)`: whether an
  // existing file of the directory was written by an earlier write of this
  // kind (and goes, where the staged files do not replace it).
  absl::Status Publish(const std::function<bool(const std::string&)>& stale);

 private:
  StagedDirectory(std::string dir, std::string staging)
      : dir_(std::move(dir)), staging_(std::move(staging)) {}

  std::string dir_;
  std::string staging_;
  bool published_ = false;
};

}  // namespace io
}  // namespace zero3

#endif  // ZERO3_CORE_IO_STAGED_DIRECTORY_H_
