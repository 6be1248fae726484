// Copyright 2026 The zero3 Authors.
//
// mapped_file.h: a file mapped read-only into memory.
//
// Large data files are read through the mapping, so only the pages a reader
// touches are loaded (and the kernel may drop them again): a multi-GB file
// costs address space, not memory. Movable, not copyable; unmaps when
// destroyed. Reading the bytes is thread-safe.

#ifndef ZERO3_CORE_UTIL_MAPPED_FILE_H_
#define ZERO3_CORE_UTIL_MAPPED_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace zero3 {

class MappedFile {
 public:
  // Maps all of `path`. NotFound naming the file if it cannot be opened.
  // An empty file maps to size() 0 and data() nullptr.
  static absl::StatusOr<MappedFile> Open(const std::string& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  MappedFile(std::string path, const uint8_t* data, int64_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  void Unmap();

  std::string path_;
  const uint8_t* data_ = nullptr;
  int64_t size_ = 0;
};

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_MAPPED_FILE_H_
