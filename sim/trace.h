// Copyright 2026 The zero3 Authors.
//
// trace.h: Chrome trace-event JSON (opens in Perfetto and chrome://tracing).
//
// One process per rank, one track (thread) per host thread, stream and
// engine. Spans are complete events ("ph":"X") with times in microseconds
// printed to the nanosecond, so equal inputs give byte-identical files.
// Not thread-safe; the simulator records from one thread at a time.

#ifndef ZERO3_SIM_TRACE_H_
#define ZERO3_SIM_TRACE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace zero3 {
namespace sim {

class Trace {
 public:
  struct Span {
    int pid;
    int tid;
    std::string name;
    int64_t start_ns;
    int64_t end_ns;
    int64_t bytes;  // 0 when not a data movement
    std::string category;
    std::string kind;  // a kernel's KernelCall::OpName(); else empty
  };

  void NameProcess(int pid, std::string name);
  void NameTrack(int pid, int tid, std::string name);
  void AddSpan(int pid, int tid, absl::string_view name, int64_t start_ns,
               int64_t end_ns, int64_t bytes = 0,
               absl::string_view category = "", absl::string_view kind = "");

  const std::vector<Span>& spans() const { return spans_; }
  // Name of (pid, tid), or "" if unnamed.
  std::string TrackName(int pid, int tid) const;

  void WriteJson(std::ostream& out) const;
  std::string ToJson() const;
  // Writes the JSON to `path` atomically, gzip-compressed when `path` ends
  // in ".gz" (io::WriteWholeFile).
  absl::Status WriteFile(const std::string& path) const;

 private:
  struct TrackName_ {
    int pid;
    int tid;
    std::string name;
  };
  std::vector<std::pair<int, std::string>> processes_;
  std::vector<TrackName_> tracks_;
  std::vector<Span> spans_;
};

}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_TRACE_H_
