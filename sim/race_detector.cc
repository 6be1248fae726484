// Copyright 2026 The zero3 Authors.

#include "sim/race_detector.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/check.h"

namespace zero3 {
namespace sim {
namespace {

std::string FormatTime(int64_t ns) {
  return absl::StrFormat("%.3f ms", static_cast<double>(ns) / 1e6);
}

}  // namespace

void JoinInto(VectorClock& dst, const VectorClock& src) {
  if (dst.size() < src.size()) dst.resize(src.size(), 0);
  for (size_t i = 0; i < src.size(); ++i) dst[i] = std::max(dst[i], src[i]);
}

RaceDetector::RaceDetector(int rank) : rank_(rank) { AddAgent("host"); }

int RaceDetector::AddAgent(std::string name) {
  const int id = static_cast<int>(agents_.size());
  agents_.push_back(Agent{std::move(name), VectorClock(id + 1, 0)});
  agents_.back().clock[id] = 1;
  return id;
}

void RaceDetector::Tick(int agent) {
  VectorClock& c = agents_[agent].clock;
  if (c.size() <= static_cast<size_t>(agent)) c.resize(agent + 1, 0);
  ++c[agent];
}

void RaceDetector::Join(int dst, int src) {
  JoinInto(agents_[dst].clock, agents_[src].clock);
}

void RaceDetector::JoinClock(int dst, const VectorClock& clock) {
  JoinInto(agents_[dst].clock, clock);
}

bool RaceDetector::OrderedBefore(const Access& a, int agent) const {
  if (a.agent == agent) return true;  // program order within one agent
  const VectorClock& c = agents_[agent].clock;
  return a.agent < static_cast<int>(c.size()) && a.epoch <= c[a.agent];
}

int RaceDetector::InternOp(const OpInfo& op) {
  if (!ops_.empty()) {
    const OpInfo& last = ops_.back();
    if (last.agent == op.agent && last.start_ns == op.start_ns &&
        last.label == op.label) {
      return static_cast<int>(ops_.size()) - 1;
    }
  }
  ops_.push_back(op);
  return static_cast<int>(ops_.size()) - 1;
}

void RaceDetector::Report(RaceReport report) {
  const std::string key =
      absl::StrCat(static_cast<int>(report.kind), "|", report.buffer, "|",
                   report.first.label, "|", report.second.label);
  if (!reported_.insert(key).second) return;
  auto describe = [&](const OpInfo& op, bool write) {
    return absl::StrCat(write ? "write" : "read", " by '", op.label, "' on ",
                        agents_[op.agent].name, " [", FormatTime(op.start_ns),
                        ", ", FormatTime(op.end_ns), "]");
  };
  const std::string where =
      absl::StrCat("'", report.buffer, "' (rank ", rank_, ") bytes [",
                   report.offset, ", ", report.offset + report.bytes, ")");
  switch (report.kind) {
    case RaceReport::Kind::kRace:
      report.message =
          absl::StrCat("race on ", where, ": ",
                       describe(report.first, report.first_is_write), " and ",
                       describe(report.second, report.second_is_write),
                       " are not ordered by any synchronize or event");
      break;
    case RaceReport::Kind::kUseAfterFree:
      report.message = absl::StrCat(
          "use after free of ", where, ": ",
          describe(report.second, report.second_is_write), " after '",
          report.first.label, "' on ", agents_[report.first.agent].name, " at ",
          FormatTime(report.first.start_ns));
      break;
    case RaceReport::Kind::kFreeWhileInUse:
      report.message = absl::StrCat(
          "buffer freed while in use: ", where, " freed by '",
          report.second.label, "' on ", agents_[report.second.agent].name,
          " at ", FormatTime(report.second.start_ns), " while ",
          describe(report.first, report.first_is_write),
          " is not ordered before the free");
      break;
    case RaceReport::Kind::kUninitializedRead:
      report.message = absl::StrCat("read of never-written bytes: ", where,
                                    " read by '", report.second.label, "' on ",
                                    agents_[report.second.agent].name, " at ",
                                    FormatTime(report.second.start_ns));
      break;
  }
  reports_.push_back(std::move(report));
}

void RaceDetector::OnAllocate(uint64_t buffer, std::string label, int64_t bytes,
                              bool initialized) {
  BufferState& state = buffers_[buffer];
  state.label = std::move(label);
  state.bytes = bytes;
  if (initialized && bytes > 0) state.written[0] = bytes;
}

void RaceDetector::ReportUseAfterFree(uint64_t buffer, int64_t offset,
                                      int64_t bytes, bool write,
                                      const OpInfo& op) {
  auto freed = freed_.find(buffer);
  RaceReport r;
  r.kind = RaceReport::Kind::kUseAfterFree;
  r.buffer = freed == freed_.end() ? "unknown" : freed->second.first;
  if (freed != freed_.end()) r.first = freed->second.second;
  r.offset = offset;
  r.bytes = bytes;
  r.second = op;
  r.second_is_write = write;
  Report(std::move(r));
}

void RaceDetector::OnFree(uint64_t buffer, int agent, const OpInfo& op) {
  auto it = buffers_.find(buffer);
  if (it == buffers_.end()) {
    ReportUseAfterFree(buffer, 0, 0, true, op);
    return;
  }
  BufferState& state = it->second;
  for (const Access* access : InOrder(state)) {
    const Access& a = *access;
    if (OrderedBefore(a, agent)) continue;
    RaceReport r;
    r.kind = RaceReport::Kind::kFreeWhileInUse;
    r.buffer = state.label;
    r.offset = a.begin;
    r.bytes = a.end - a.begin;
    r.first = ops_[a.op];
    r.first_is_write = a.write;
    r.second = op;
    Report(std::move(r));
  }
  freed_[buffer] = {state.label, op};
  buffers_.erase(it);
}

void RaceDetector::MarkWritten(BufferState& state, int64_t begin, int64_t end) {
  auto& w = state.written;
  auto it = w.upper_bound(begin);
  if (it != w.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= begin) {
      begin = prev->first;
      end = std::max(end, prev->second);
      it = w.erase(prev);
    }
  }
  while (it != w.end() && it->first <= end) {
    end = std::max(end, it->second);
    it = w.erase(it);
  }
  w[begin] = end;
}

int64_t RaceDetector::FirstUnwritten(const BufferState& state, int64_t begin,
                                     int64_t end) const {
  const auto& w = state.written;
  int64_t pos = begin;
  auto it = w.upper_bound(pos);
  if (it != w.begin()) {
    auto prev = std::prev(it);
    if (prev->second > pos) pos = prev->second;
  }
  if (pos >= end) return -1;
  return pos;
}

void RaceDetector::OnAccess(uint64_t buffer, int64_t offset, int64_t bytes,
                            bool write, const OpInfo& op) {
  if (bytes <= 0) return;
  auto it = buffers_.find(buffer);
  if (it == buffers_.end()) {
    ReportUseAfterFree(buffer, offset, bytes, write, op);
    return;
  }
  BufferState& state = it->second;
  const int64_t begin = offset;
  const int64_t end = offset + bytes;
  const int agent = op.agent;
  const uint64_t epoch = agents_[agent].clock[agent];

  if (!write) {
    const int64_t unwritten = FirstUnwritten(state, begin, end);
    if (unwritten >= 0) {
      RaceReport r;
      r.kind = RaceReport::Kind::kUninitializedRead;
      r.buffer = state.label;
      r.offset = unwritten;
      r.bytes = 1;
      r.second = op;
      Report(std::move(r));
    }
  }

  const int op_index = InternOp(op);
  for (auto [map, it] : Overlapping(state, begin, end)) {
    const Access& a = it->second;
    const bool ordered = OrderedBefore(a, agent);
    if (!ordered && (a.write || write)) {
      RaceReport r;
      r.kind = RaceReport::Kind::kRace;
      r.buffer = state.label;
      r.offset = std::max(a.begin, begin);
      r.bytes = std::min(a.end, end) - r.offset;
      r.first = ops_[a.op];
      r.first_is_write = a.write;
      r.second = op;
      r.second_is_write = write;
      Report(std::move(r));
    }
    // A write that covers an earlier access ordered before it supersedes it:
    // anything ordered after this write is ordered after that access, and
    // anything not ordered after this write conflicts with it and is
    // reported against it.
    const bool superseded =
        write && ordered && a.begin >= begin && a.end <= end;
    // Repeated reads by one agent of the same range: keep the latest.
    const bool repeated = !write && !a.write && a.agent == agent &&
                          a.begin == begin && a.end == end;
    if (superseded || repeated) map->erase(it);
  }
  const uint64_t seq = state.next_seq++;
  state.accesses[LengthClass(end - begin)].emplace(
      std::make_pair(begin, seq),
      Access{agent, epoch, write, begin, end, op_index, seq});
  if (write) MarkWritten(state, begin, end);
}

int RaceDetector::LengthClass(int64_t bytes) {
  int k = 0;
  while (k < 62 && (int64_t{2} << k) <= bytes) ++k;
  return k;
}

std::vector<
    std::pair<RaceDetector::AccessMap*, RaceDetector::AccessMap::iterator>>
RaceDetector::Overlapping(BufferState& state, int64_t begin, int64_t end) {
  std::vector<std::pair<AccessMap*, AccessMap::iterator>> found;
  for (auto& [k, map] : state.accesses) {
    const int64_t reach = int64_t{2} << k;
    for (auto it = map.lower_bound({begin - reach, 0});
         it != map.end() && it->second.begin < end; ++it) {
      if (it->second.end > begin) found.push_back({&map, it});
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& x, const auto& y) {
    return x.second->second.seq < y.second->second.seq;
  });
  return found;
}

std::vector<const RaceDetector::Access*> RaceDetector::InOrder(
    const BufferState& state) {
  std::vector<const Access*> all;
  for (const auto& [k, map] : state.accesses) {
    for (const auto& [key, a] : map) all.push_back(&a);
  }
  std::sort(all.begin(), all.end(),
            [](const Access* x, const Access* y) { return x->seq < y->seq; });
  return all;
}

void RaceDetector::Prune() {
  // Every future access is by the host, at a clock at least the host's now,
  // or by a stream on work the host enqueues from now on, which joins the
  // host's clock. So an access the host's clock has seen is ordered before
  // every future access and cannot take part in a race.
  const VectorClock& host = agents_[0].clock;
  std::vector<int> remap(ops_.size(), -1);
  std::vector<OpInfo> kept_ops;
  for (auto& [id, state] : buffers_) {
    for (auto& [k, map] : state.accesses) {
      for (auto it = map.begin(); it != map.end();) {
        const Access& a = it->second;
        const bool settled =
            a.agent < static_cast<int>(host.size()) && a.epoch <= host[a.agent];
        it = settled ? map.erase(it) : std::next(it);
      }
    }
  }
  // Compact the op table in a deterministic order (by op index).
  std::vector<std::pair<int, Access*>> refs;
  for (auto& [id, state] : buffers_) {
    for (auto& [k, map] : state.accesses) {
      for (auto& [key, a] : map) refs.push_back({a.op, &a});
    }
  }
  std::sort(refs.begin(), refs.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [op, access] : refs) {
    if (remap[op] < 0) {
      remap[op] = static_cast<int>(kept_ops.size());
      kept_ops.push_back(ops_[op]);
    }
    access->op = remap[op];
  }
  ops_ = std::move(kept_ops);
}

int64_t RaceDetector::history_size() const {
  int64_t n = 0;
  for (const auto& [id, state] : buffers_) {
    for (const auto& [k, map] : state.accesses) n += map.size();
  }
  return n;
}

}  // namespace sim
}  // namespace zero3
