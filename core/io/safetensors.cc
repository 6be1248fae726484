// Copyright 2026 The zero3 Authors.

#include "core/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/json.h"
#include "core/io/atomic_file.h"
#include "core/util/check.h"
#include "core/util/regular_file.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace io {
namespace {

using config::JsonValue;

// The safetensors library refuses larger headers too.
constexpr int64_t kMaxHeaderBytes = int64_t{100} << 20;

struct DTypeInfo {
  TensorDType dtype;
  const char* name;
  int64_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {TensorDType::kF64, "F64", 8},        {TensorDType::kF32, "F32", 4},
    {TensorDType::kF16, "F16", 2},        {TensorDType::kBF16, "BF16", 2},
    {TensorDType::kI64, "I64", 8},        {TensorDType::kI32, "I32", 4},
    {TensorDType::kI16, "I16", 2},        {TensorDType::kI8, "I8", 1},
    {TensorDType::kU64, "U64", 8},        {TensorDType::kU32, "U32", 4},
    {TensorDType::kU16, "U16", 2},        {TensorDType::kU8, "U8", 1},
    {TensorDType::kBool, "BOOL", 1},      {TensorDType::kF8E4M3, "F8_E4M3", 1},
    {TensorDType::kF8E5M2, "F8_E5M2", 1},
};

const DTypeInfo& InfoOf(TensorDType dtype) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.dtype == dtype) return d;
  }
  ZR_CHECK(false) << "unknown TensorDType " << static_cast<int>(dtype);
  return kDTypes[0];
}

absl::Status Invalid(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": not a valid safetensors file: ", what));
}

// Reads exactly `size` bytes at `offset`; short reads are retried.
absl::Status PreadAll(int fd, int64_t offset, int64_t size, void* out,
                      absl::string_view path) {
  char* p = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = pread(fd, p, static_cast<size_t>(size), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::InternalError(
          absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
    }
    if (n == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": the file ends at byte ", offset, " (truncated)"));
    }
    p += n;
    offset += n;
    size -= n;
  }
  return absl::OkStatus();
}

// The tensor's entry from its header value; checks everything that does
// not depend on the other tensors.
absl::StatusOr<TensorEntry> ParseEntry(const std::string& name,
                                       const JsonValue& v, int64_t data_bytes,
                                       absl::string_view path) {
  const std::string where = absl::StrCat("tensor '", name, "'");
  if (!v.is_object())
    return Invalid(path, absl::StrCat(where, " is not an object"));
  TensorEntry t;
  t.name = name;
  const JsonValue* dtype = v.Find("dtype");
  if (dtype == nullptr || !dtype->is_string()) {
    return Invalid(path, absl::StrCat(where, " has no \"dtype\" string"));
  }
  absl::StatusOr<TensorDType> d = ParseTensorDType(dtype->string_value());
  if (!d.ok())
    return Invalid(path, absl::StrCat(where, ": ", d.status().message()));
  t.dtype = *d;
  const JsonValue* shape = v.Find("shape");
  if (shape == nullptr || !shape->is_array()) {
    return Invalid(path, absl::StrCat(where, " has no \"shape\" array"));
  }
  int64_t numel = 1;
  for (const JsonValue& dim : shape->array()) {
    absl::optional<int64_t> n =
        dim.is_number() ? dim.AsExactInt64() : absl::nullopt;
    if (!n.has_value() || *n < 0) {
      return Invalid(path, absl::StrCat(where,
                                        " has a shape entry that is not "
                                        "a non-negative integer"));
    }
    if (*n > 0 && numel > std::numeric_limits<int64_t>::max() / 16 / *n) {
      return Invalid(path, absl::StrCat(where, " has a shape too large"));
    }
    numel *= *n;
    t.shape.push_back(*n);
  }
  const JsonValue* offsets = v.Find("data_offsets");
  if (offsets == nullptr || !offsets->is_array() ||
      offsets->array().size() != 2) {
    return Invalid(path, absl::StrCat(where, " has no \"data_offsets\" pair"));
  }
  absl::optional<int64_t> begin = offsets->array()[0].is_number()
                                      ? offsets->array()[0].AsExactInt64()
                                      : absl::nullopt;
  absl::optional<int64_t> end = offsets->array()[1].is_number()
                                    ? offsets->array()[1].AsExactInt64()
                                    : absl::nullopt;
  if (!begin.has_value() || !end.has_value() || *begin < 0 || *end < *begin) {
    return Invalid(path, absl::StrCat(where,
                                      " has data_offsets that are not "
                                      "integers 0 <= begin <= end"));
  }
  t.begin = *begin;
  t.end = *end;
  const int64_t size = TensorDTypeSize(t.dtype);
  if (t.bytes() != numel * size) {
    return Invalid(
        path, absl::StrCat(where, ": shape ", t.ShapeString(), " of ",
                           TensorDTypeName(t.dtype), " needs ", numel * size,
                           " bytes, data_offsets [", t.begin, ", ", t.end,
                           "] hold ", t.bytes()));
  }
  if (t.end > data_bytes) {
    return Invalid(path, absl::StrCat(where, ": data_offsets [", t.begin, ", ",
                                      t.end, "] reach past the data section (",
                                      data_bytes, " bytes: truncated file?)"));
  }
  if (t.begin % size != 0) {
    return Invalid(
        path, absl::StrCat(where, " starts at byte ", t.begin,
                           ", not aligned to its ", size, "-byte elements"));
  }
  return t;
}

}  // namespace

absl::string_view TensorDTypeName(TensorDType dtype) {
  return InfoOf(dtype).name;
}

int64_t TensorDTypeSize(TensorDType dtype) { return InfoOf(dtype).size; }

absl::StatusOr<TensorDType> ParseTensorDType(absl::string_view name) {
  std::vector<std::string> names;
  for (const DTypeInfo& d : kDTypes) {
    if (name == d.name) return d.dtype;
    names.push_back(d.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name, "' (the format has ",
                   absl::StrJoin(names, ", "), ")"));
}

int64_t TensorEntry::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorEntry::ShapeString() const {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(
    const std::string& path) {
  absl::StatusOr<int> opened = OpenRegularFile(path);
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile(path, fd));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot stat ", path, ": ", std::strerror(errno)));
  }
  const int64_t file_bytes = st.st_size;
  if (file_bytes < 8) {
    return Invalid(path, absl::StrCat("it has ", file_bytes,
                                      " bytes, fewer than the 8 of the "
                                      "header length"));
  }
  unsigned char le[8];
  ZR_RETURN_IF_ERROR(PreadAll(fd, 0, 8, le, path));
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = header << 8 | le[i];
  if (header > static_cast<uint64_t>(file_bytes - 8)) {
    return Invalid(path, absl::StrCat("the header length ", header,
                                      " reaches past the end of the file (",
                                      file_bytes, " bytes)"));
  }
  if (header > static_cast<uint64_t>(kMaxHeaderBytes)) {
    return Invalid(path, absl::StrCat("the header length ", header,
                                      " is above the format's limit of ",
                                      kMaxHeaderBytes, " bytes"));
  }
  std::string json(header, '\0');
  ZR_RETURN_IF_ERROR(
      PreadAll(fd, 8, static_cast<int64_t>(header), &json[0], path));
  file->data_offset_ = 8 + static_cast<int64_t>(header);
  ZR_RETURN_IF_ERROR(file->ParseHeader(json, file_bytes - file->data_offset_));
  return file;
}

absl::Status SafetensorsFile::ParseHeader(absl::string_view json,
                                          int64_t data_bytes) {
  absl::StatusOr<JsonValue> root = config::ParseJson(json);
  if (!root.ok()) {
    return Invalid(path_, absl::StrCat("the header is not JSON: ",
                                       root.status().message()));
  }
  if (!root->is_object()) {
    return Invalid(path_, "the header is not a JSON object");
  }
  for (const JsonValue::Member& m : root->members()) {
    if (m.key == "__metadata__") {
      if (!m.value.is_object()) {
        return Invalid(path_, "__metadata__ is not an object");
      }
      for (const JsonValue::Member& kv : m.value.members()) {
        if (!kv.value.is_string()) {
          return Invalid(path_, absl::StrCat("__metadata__ value '", kv.key,
                                             "' is not a string"));
        }
        metadata_.emplace_back(kv.key, kv.value.string_value());
      }
      continue;
    }
    ZR_ASSIGN_OR_RETURN(TensorEntry t,
                        ParseEntry(m.key, m.value, data_bytes, path_));
    tensors_.push_back(std::move(t));
  }
  std::sort(tensors_.begin(), tensors_.end(),
            [](const TensorEntry& a, const TensorEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  // Sorted by start, the data must be covered exactly: no overlap, no hole.
  int64_t covered = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorEntry& t = tensors_[i];
    if (t.begin < covered) {
      return Invalid(path_, absl::StrCat("tensors '", tensors_[i - 1].name,
                                         "' and '", t.name, "' overlap"));
    }
    if (t.begin > covered) {
      return Invalid(path_, absl::StrCat("bytes [", covered, ", ", t.begin,
                                         ") of the data section before "
                                         "tensor '",
                                         t.name, "' belong to no tensor"));
    }
    covered = t.end;
    index_[t.name] = static_cast<int>(i);
  }
  if (covered != data_bytes) {
    return Invalid(path_, absl::StrCat("the data section has ", data_bytes,
                                       " bytes, the tensors cover ", covered));
  }
  return absl::OkStatus();
}

SafetensorsFile::~SafetensorsFile() { close(fd_); }

const TensorEntry* SafetensorsFile::Find(absl::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

absl::Status SafetensorsFile::Read(const TensorEntry& tensor, int64_t offset,
                                   int64_t size, void* out) const {
  ZR_CHECK(offset >= 0 && size >= 0 && offset + size <= tensor.bytes())
      << "bytes [" << offset << ", " << offset + size << ") of tensor "
      << tensor.name << " (" << tensor.bytes() << " bytes)";
  return PreadAll(fd_, data_offset_ + tensor.begin + offset, size, out, path_);
}

absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<TensorToWrite>& tensors,
                              const Metadata& metadata, FileDigest* digest) {
  std::vector<const TensorToWrite*> order;
  for (const TensorToWrite& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const TensorToWrite* a, const TensorToWrite* b) {
              const int64_t sa = TensorDTypeSize(a->dtype);
              const int64_t sb = TensorDTypeSize(b->dtype);
              return sa != sb ? sa > sb : a->name < b->name;
            });
  JsonValue header = JsonValue::Object();
  if (!metadata.empty()) {
    JsonValue& m = header.Set("__metadata__", JsonValue::Object());
    for (const auto& kv : metadata)
      m.Set(kv.first, JsonValue::String(kv.second));
  }
  int64_t offset = 0;
  for (const TensorToWrite* t : order) {
    int64_t numel = 1;
    JsonValue shape = JsonValue::Array();
    for (int64_t d : t->shape) {
      numel *= d;
      shape.Append(JsonValue::Int(d));
    }
    const int64_t bytes = numel * TensorDTypeSize(t->dtype);
    if (t->name == "__metadata__" || header.Find(t->name) != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write ", path, ": tensor name '", t->name,
                       "' is reserved or used twice"));
    }
    if (static_cast<int64_t>(t->data.size()) != bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write ", path, ": tensor '", t->name,
                       "' of shape [", absl::StrJoin(t->shape, ", "),
                       "] needs ", bytes, " bytes, got ", t->data.size()));
    }
    JsonValue entry = JsonValue::Object();
    entry.Set("dtype",
              JsonValue::String(std::string(TensorDTypeName(t->dtype))));
    entry.Set("shape", std::move(shape));
    JsonValue offsets = JsonValue::Array();
    offsets.Append(JsonValue::Int(offset));
    offsets.Append(JsonValue::Int(offset + bytes));
    entry.Set("data_offsets", std::move(offsets));
    header.Set(t->name, std::move(entry));
    offset += bytes;
  }
  std::string json = config::WriteJson(header, config::JsonStyle::kCompact);
  json.resize((json.size() + 7) / 8 * 8, ' ');
  std::string length(8, '\0');
  for (int i = 0; i < 8; ++i) {
    length[i] = static_cast<char>(
        (static_cast<uint64_t>(json.size()) >> (8 * i)) & 0xff);
  }
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file,
                      AtomicFile::Create(path));
  ZR_RETURN_IF_ERROR(file->Write(length));
  ZR_RETURN_IF_ERROR(file->Write(json));
  for (const TensorToWrite* t : order) ZR_RETURN_IF_ERROR(file->Write(t->data));
  if (digest != nullptr) *digest = file->digest();
  return file->Commit();
}

}  // namespace io
}  // namespace zero3
