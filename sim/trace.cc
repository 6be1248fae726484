// Copyright 2026 The zero3 Authors.

#include "sim/trace.h"

#include <algorithm>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/io/write_file.h"

namespace zero3 {
namespace sim {
namespace {

std::string JsonEscape(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string Micros(int64_t ns) {
  // Integer arithmetic keeps the text exact and identical across runs.
  const bool negative = ns < 0;
  const uint64_t a = negative ? -static_cast<uint64_t>(ns) : ns;
  return absl::StrFormat("%s%d.%03d", negative ? "-" : "", a / 1000, a % 1000);
}

}  // namespace

void Trace::NameProcess(int pid, std::string name) {
  processes_.push_back({pid, std::move(name)});
}

void Trace::NameTrack(int pid, int tid, std::string name) {
  tracks_.push_back({pid, tid, std::move(name)});
}

void Trace::AddSpan(int pid, int tid, absl::string_view name, int64_t start_ns,
                    int64_t end_ns, int64_t bytes, absl::string_view category,
                    absl::string_view kind) {
  spans_.push_back(Span{pid, tid, std::string(name), start_ns, end_ns, bytes,
                        std::string(category), std::string(kind)});
}

std::string Trace::TrackName(int pid, int tid) const {
  for (const auto& t : tracks_) {
    if (t.pid == pid && t.tid == tid) return t.name;
  }
  return "";
}

void Trace::WriteJson(std::ostream& out) const {
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&]() {
    if (!first) out << ",\n";
    first = false;
  };
  for (const auto& [pid, name] : processes_) {
    sep();
    out << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << pid
        << ",\"tid\":0,\"args\":{\"name\":\"" << JsonEscape(name) << "\"}}";
    sep();
    out << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << pid
        << ",\"tid\":0,\"args\":{\"sort_index\":" << pid << "}}";
  }
  for (const auto& t : tracks_) {
    sep();
    out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << t.pid
        << ",\"tid\":" << t.tid << ",\"args\":{\"name\":\""
        << JsonEscape(t.name) << "\"}}";
    sep();
    out << "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" << t.pid
        << ",\"tid\":" << t.tid << ",\"args\":{\"sort_index\":" << t.tid
        << "}}";
  }
  std::vector<const Span*> sorted;
  sorted.reserve(spans_.size());
  for (const Span& s : spans_) sorted.push_back(&s);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Span* a, const Span* b) {
                     if (a->pid != b->pid) return a->pid < b->pid;
                     if (a->tid != b->tid) return a->tid < b->tid;
                     return a->start_ns < b->start_ns;
                   });
  for (const Span* s : sorted) {
    sep();
    out << "{\"ph\":\"X\",\"name\":\"" << JsonEscape(s->name) << "\",";
    if (!s->category.empty()) {
      out << "\"cat\":\"" << JsonEscape(s->category) << "\",";
    }
    out << "\"pid\":" << s->pid << ",\"tid\":" << s->tid
        << ",\"ts\":" << Micros(s->start_ns)
        << ",\"dur\":" << Micros(s->end_ns - s->start_ns);
    if (s->bytes > 0) out << ",\"args\":{\"bytes\":" << s->bytes << "}";
    out << "}";
  }
  out << "\n]}\n";
}

std::string Trace::ToJson() const {
  std::ostringstream out;
  WriteJson(out);
  return out.str();
}

absl::Status Trace::WriteFile(const std::string& path) const {
  return io::WriteWholeFile(path, ToJson());
}

}  // namespace sim
}  // namespace zero3
