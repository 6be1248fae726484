// Copyright 2026 The zero3 Authors.

#include "core/engine/checkpoint_fault.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace zero3 {
namespace engine {
namespace {

struct Fault {
  std::string point;
  int64_t occurrence = 1;
  int error = 0;  // 0: SIGKILL
  int64_t seen = 0;
};

// ENOSPC, EACCES, ENOENT; -1 for another name.
int ParseErrno(absl::string_view name) {
  if (name == "ENOSPC") return ENOSPC;
  if (name == "EACCES") return EACCES;
  if (name == "ENOENT") return ENOENT;
  return -1;
}

// The fault the environment asks for; an empty point when none.
Fault& TheFault() {
  static Fault* fault = [] {
    auto* f = new Fault;
    const char* env = std::getenv("ZERO3_CHECKPOINT_FAULT");
    if (env == nullptr) return f;
    const std::vector<std::string> parts = absl::StrSplit(env, ':');
    f->point = parts[0];
    bool ok = parts.size() <= 3;
    if (ok && parts.size() >= 2) {
      ok = absl::SimpleAtoi(parts[1], &f->occurrence);
    }
    if (ok && parts.size() == 3) {
      f->error = ParseErrno(parts[2]);
      ok = f->error > 0;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "ZERO3_CHECKPOINT_FAULT=%s: want POINT[:K[:ERRNO]]\n", env);
      std::abort();
    }
    return f;
  }();
  return *fault;
}

}  // namespace

absl::Status CheckpointFaultPoint(absl::string_view point,
                                  const std::string& path) {
  static std::mutex mu;
  Fault& f = TheFault();
  if (f.point.empty() || f.point != point) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu);
  if (++f.seen != f.occurrence) return absl::OkStatus();
  if (f.error == 0) raise(SIGKILL);
  return absl::InvalidArgumentError(
      absl::StrCat("cannot write ", path, ": ", std::strerror(f.error)));
}

}  // namespace engine
}  // namespace zero3
