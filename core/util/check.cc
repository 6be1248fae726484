// Copyright 2026 The zero3 Authors.

#include "core/util/check.h"

#include <cstdio>
#include <cstdlib>

namespace zero3 {
namespace internal_check {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": CHECK failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  stream_ << "\n";
  const std::string message = stream_.str();
  std::fwrite(message.data(), 1, message.size(), stderr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal_check
}  // namespace zero3
