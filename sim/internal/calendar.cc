// Copyright 2026 The zero3 Authors.

#include "sim/internal/calendar.h"

#include <algorithm>

#include "core/util/check.h"

namespace zero3 {
namespace sim {
namespace internal {

int64_t Calendar::EarliestStart(int64_t ready, int64_t duration) const {
  // First live interval that ends after `ready`.
  auto it = std::upper_bound(
      intervals_.begin() + pruned_, intervals_.end(), ready,
      [](int64_t t, const Interval& iv) { return t < iv.end; });
  int64_t start = ready;
  for (; it != intervals_.end(); ++it) {
    if (start + duration <= it->start) return start;
    start = std::max(start, it->end);
  }
  return start;
}

bool Calendar::Overlaps(int64_t start, int64_t end) const {
  auto it = std::upper_bound(
      intervals_.begin() + pruned_, intervals_.end(), start,
      [](int64_t t, const Interval& iv) { return t < iv.end; });
  return it != intervals_.end() && it->start < end;
}

int64_t Calendar::BusyWithin(int64_t start, int64_t end) const {
  int64_t busy = 0;
  for (auto it = std::upper_bound(
           intervals_.begin() + pruned_, intervals_.end(), start,
           [](int64_t t, const Interval&iv) { return t < iv.end; });
       it != intervals_.end() && it->start < end; ++it) {
    busy += std::min(end, it->end) - std::max(start, it->start);
  }
  return busy;
}

void Calendar::Reserve(int64_t start, int64_t duration) {
  if (duration <= 0) return;
  const Interval iv{start, start + duration};
  auto it = std::upper_bound(
      intervals_.begin() + pruned_, intervals_.end(), start,
      [](int64_t t, const Interval& x) { return t < x.start; });
  ZR_DCHECK(it == intervals_.end() || iv.end <= it->start)
      << "calendar overlap";
  // Merge with touching neighbours to keep the list short.
  if (it != intervals_.begin() + pruned_ && std::prev(it)->end == iv.start) {
    auto prev = std::prev(it);
    prev->end = iv.end;
    if (it != intervals_.end() && it->start == prev->end) {
      prev->end = it->end;
      intervals_.erase(it);
    }
    return;
  }
  if (it != intervals_.end() && it->start == iv.end) {
    it->start = iv.start;
    return;
  }
  intervals_.insert(it, iv);
}

void Calendar::Prune(int64_t horizon) {
  while (pruned_ < intervals_.size() && intervals_[pruned_].end <= horizon) {
    ++pruned_;
  }
  // Compact once the dead prefix dominates, amortized O(1) per interval.
  if (pruned_ > 64 && pruned_ * 2 > intervals_.size()) {
    intervals_.erase(intervals_.begin(), intervals_.begin() + pruned_);
    pruned_ = 0;
  }
}

int64_t EarliestCommonStart(const std::vector<const Calendar*>& calendars,
                            int64_t ready, int64_t duration) {
  int64_t t = ready;
  while (true) {
    int64_t latest = t;
    for (const Calendar* c : calendars) {
      latest = std::max(latest, c->EarliestStart(t, duration));
    }
    if (latest == t) return t;
    t = latest;
  }
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
