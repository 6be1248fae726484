// Copyright 2026 The zero3 Authors.
//
// calendar.h: when a serial resource (the compute engine, a copy direction's
// link, the collective fabric) is busy.
//
// Work is placed at the earliest time at or after it is ready where the
// resource is free for its whole duration, so work that becomes ready later
// can fill an earlier gap (the GPU runs whatever is ready). Intervals that end
// before the prune horizon are dropped: no future work can start before the
// host thread's clock, so memory stays bounded by the work in flight.
// Not thread-safe.

#ifndef ZERO3_SIM_INTERNAL_CALENDAR_H_
#define ZERO3_SIM_INTERNAL_CALENDAR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zero3 {
namespace sim {
namespace internal {

class Calendar {
 public:
  // Earliest start >= ready with [start, start + duration) free.
  int64_t EarliestStart(int64_t ready, int64_t duration) const;
  // Marks [start, start + duration) busy; it must be free.
  void Reserve(int64_t start, int64_t duration);
  // True if some busy interval overlaps [start, end).
  bool Overlaps(int64_t start, int64_t end) const;
  // How many ns of [start, end) are busy.
  int64_t BusyWithin(int64_t start, int64_t end) const;
  // Drops intervals ending at or before `horizon`.
  void Prune(int64_t horizon);

  int64_t busy_until() const {
    return intervals_.empty() ? 0 : intervals_.back().end;
  }
  size_t size() const { return intervals_.size(); }

 private:
  struct Interval {
    int64_t start;
    int64_t end;
  };
  std::vector<Interval> intervals_;  // sorted, disjoint
  size_t pruned_ = 0;                // intervals_[0, pruned_) are dead
};

// Earliest common start >= ready at which every calendar is free for
// `duration`.
int64_t EarliestCommonStart(const std::vector<const Calendar*>& calendars,
                            int64_t ready, int64_t duration);

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_CALENDAR_H_
