// Copyright 2026 The zero3 Authors.
//
// safetensors.h: reading and writing the safetensors format.
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON header, then the raw tensor data. The header maps each tensor name to
// {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}
// (byte offsets into the data section) and may hold "__metadata__", a map of
// strings. Elements are little-endian and row-major.
//
//   ZR_ASSIGN_OR_RETURN(auto file, io::SafetensorsFile::Open(path));
//   const io::TensorEntry* t = file->Find("model.norm.weight");
//   ZR_RETURN_IF_ERROR(file->Read(*t, 0, t->bytes(), out));
//
// Open reads and validates the header only; tensor data is read by byte
// range (pread), so a reader touches just the ranges it asks for. Before
// anything larger than the header is allocated, Open rejects (naming the
// file, and the tensor where there is one): a file shorter than 8 bytes, a
// header length past the end of the file, a header that is not a JSON
// object, an unknown dtype, a shape whose size does not match its byte
// range, offsets outside the data section, tensors that overlap or are not
// aligned to their element size, bytes of the data section no tensor covers,
// and a truncated data section.
//
// WriteSafetensors writes a file atomically: a temporary file beside the
// target, flushed to disk, then renamed over it; a failure leaves no file
// behind and the target untouched.
//
// A SafetensorsFile is immutable after Open; Read is thread-safe.

#ifndef ZERO3_CORE_IO_SAFETENSORS_H_
#define ZERO3_CORE_IO_SAFETENSORS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/io/atomic_file.h"

namespace zero3 {
namespace io {

// The element types of the format.
enum class TensorDType {
  kF64,
  kF32,
  kF16,
  kBF16,
  kI64,
  kI32,
  kI16,
  kI8,
  kU64,
  kU32,
  kU16,
  kU8,
  kBool,
  kF8E4M3,
  kF8E5M2,
};

// The header's name ("F32", "BF16", ...) and the bytes per element.
absl::string_view TensorDTypeName(TensorDType dtype);
int64_t TensorDTypeSize(TensorDType dtype);
// InvalidArgument for a name the format does not define.
absl::StatusOr<TensorDType> ParseTensorDType(absl::string_view name);

// One tensor of a file.
struct TensorEntry {
  std::string name;
  TensorDType dtype = TensorDType::kF32;
  std::vector<int64_t> shape;
  // Byte range [begin, end) within the data section.
  int64_t begin = 0;
  int64_t end = 0;

  int64_t bytes() const { return end - begin; }
  int64_t numel() const;
  // "[96, 32]".
  std::string ShapeString() const;
};

using Metadata = std::vector<std::pair<std::string, std::string>>;

class SafetensorsFile {
 public:
  // Opens and validates `path` (see the file comment). NotFound when the
  // file cannot be opened, InvalidArgument when it is not valid.
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(
      const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // In the order of their data.
  const std::vector<TensorEntry>& tensors() const { return tensors_; }
  // The tensor named `name`, or null.
  const TensorEntry* Find(absl::string_view name) const;
  const Metadata& metadata() const { return metadata_; }
  // Where the data section starts in the file: 8 + the header length.
  int64_t data_offset() const { return data_offset_; }

  // Reads bytes [offset, offset + size) of `tensor`'s data into `out`.
  // The range must lie within the tensor (checked). Thread-safe.
  absl::Status Read(const TensorEntry& tensor, int64_t offset, int64_t size,
                    void* out) const;

 private:
  SafetensorsFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  absl::Status ParseHeader(absl::string_view json, int64_t data_bytes);

  std::string path_;
  int fd_;
  int64_t data_offset_ = 0;
  std::vector<TensorEntry> tensors_;
  absl::flat_hash_map<std::string, int> index_;
  Metadata metadata_;
};

// A tensor to write: `data` holds exactly numel * element size bytes.
struct TensorToWrite {
  std::string name;
  TensorDType dtype = TensorDType::kF32;
  std::vector<int64_t> shape;
  absl::string_view data;
};

// Writes `tensors` (names unique, not "__metadata__") and `metadata` to
// `path` atomically. Tensors are laid out by element size, largest first,
// then by name, so every tensor is aligned to its element size; the header
// is padded with spaces to a multiple of 8 bytes. `digest`, when given,
// receives the file's size and CRC-32C, computed as it is written.
absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<TensorToWrite>& tensors,
                              const Metadata& metadata = {},
                              FileDigest* digest = nullptr);

}  // namespace io
}  // namespace zero3

#endif  // ZERO3_CORE_IO_SAFETENSORS_H_
