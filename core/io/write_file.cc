// Copyright 2026 The zero3 Authors.

#include "core/io/write_file.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/io/atomic_file.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace io {

absl::StatusOr<std::string> Gzip(absl::string_view bytes) {
  z_stream z;
  std::memset(&z, 0, sizeof(z));
  // 15 + 16: the largest window, with a gzip header and trailer.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("zlib: deflateInit2 failed");
  }
  std::string out;
  char buffer[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  int rc = Z_OK;
  // zlib counts input in 32 bits: feed it in pieces.
  size_t left = bytes.size();
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0 && left > 0) {
      z.avail_in = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
      left -= z.avail_in;
    }
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof(buffer);
    rc = deflate(&z, left == 0 ? Z_FINISH : Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      deflateEnd(&z);
      return absl::InternalError(absl::StrCat("zlib: deflate failed: ", rc));
    }
    out.append(buffer, sizeof(buffer) - z.avail_out);
  }
  deflateEnd(&z);
  return out;
}

absl::Status WriteWholeFile(const std::string& path, absl::string_view bytes) {
  std::string compressed;
  if (absl::EndsWith(path, ".gz")) {
    ZR_ASSIGN_OR_RETURN(compressed, Gzip(bytes));
    bytes = compressed;
  }
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file,
                      AtomicFile::Create(path));
  ZR_RETURN_IF_ERROR(file->Write(bytes));
  return file->Commit();
}

}  // namespace io
}  // namespace zero3
