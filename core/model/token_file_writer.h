// Copyright 2026 The zero3 Authors.
//
// token_file_writer.h: writes (and reads back) token files for tests — flat
// little-endian ids (nanoGPT's .bin) and Megatron indexed datasets
// (megatron_index.h).

#ifndef ZERO3_CORE_MODEL_TOKEN_FILE_WRITER_H_
#define ZERO3_CORE_MODEL_TOKEN_FILE_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/token_stream.h"

namespace zero3 {
namespace model {

// `name` in the test's temporary directory.
std::string TempPath(const std::string& name);

// All of `path`'s bytes ("" if it cannot be read).
std::string ReadFileBytes(const std::string& path);

// `ids` as little-endian `dtype` values, one after another.
std::string TokenBytes(const std::vector<int64_t>& ids, TokenDType dtype);

// Writes `bytes` to `path` (ZR_CHECK on failure).
void WriteFileBytes(const std::string& path, const std::string& bytes);

// PREFIX.bin and PREFIX.idx (version 1) holding `documents`, one sequence
// per document, as `dtype` (one of Megatron's: not uint32).
void WriteMegatronDataset(const std::string& prefix,
                          const std::vector<std::vector<int64_t>>& documents,
                          TokenDType dtype);

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_TOKEN_FILE_WRITER_H_
