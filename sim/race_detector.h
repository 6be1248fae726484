// Copyright 2026 The zero3 Authors.
//
// race_detector.h: happens-before race detection over one rank's agents.
//
// Agents are the rank's host thread and each of its streams. Each agent has a
// vector clock; edges come from enqueueing (host → stream), event record and
// wait (stream → event → stream), synchronize (stream or event → host), and,
// unless in strict mode, pageable copies that block the host (stream → host).
// Every access names a byte range of a buffer and the operation that made it.
// Two accesses to overlapping bytes, at least one a write, by different
// agents, neither ordered before the other, are a race. Also reported: an
// access to a freed buffer, a buffer freed while work that is not ordered
// before the free still uses it, and reads of bytes never written.
//
// Ordering across ranks (a collective joining streams of several ranks) is
// not credited: buffers are rank-local, and the engine must not depend on a
// chain through another rank to order its own accesses. This can only add
// reports, never hide one.
//
// Memory: accesses that every future access is known to be ordered after
// (those the host thread has synchronized past) are pruned, so history does
// not grow with the number of operations retired. Cost: a buffer's accesses
// are indexed by first byte, so an access is checked against those that can
// overlap it, not against every access to the buffer. Not thread-safe.

#ifndef ZERO3_SIM_RACE_DETECTOR_H_
#define ZERO3_SIM_RACE_DETECTOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"

namespace zero3 {
namespace sim {

using VectorClock = std::vector<uint64_t>;

// Elementwise maximum into `dst`.
void JoinInto(VectorClock& dst, const VectorClock& src);

// Who did an access, for reports.
struct OpInfo {
  std::string label;
  int agent = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct RaceReport {
  enum class Kind { kRace, kUseAfterFree, kFreeWhileInUse, kUninitializedRead };
  Kind kind = Kind::kRace;
  int rank = 0;
  std::string buffer;  // the buffer's label
  int64_t offset = 0;  // first overlapping byte
  int64_t bytes = 0;
  OpInfo first;   // the earlier access (or the free)
  OpInfo second;  // the later access
  bool first_is_write = false;
  bool second_is_write = false;
  std::string message;  // full human-readable report
};

class RaceDetector {
 public:
  explicit RaceDetector(int rank);

  // Agent 0 is the host thread, created here. Returns the new agent's id.
  int AddAgent(std::string name);
  const std::string& agent_name(int agent) const { return agents_[agent].name; }
  const VectorClock& clock(int agent) const { return agents_[agent].clock; }
  int num_agents() const { return static_cast<int>(agents_.size()); }

  // Advances `agent`'s own component: its next action is a new epoch.
  void Tick(int agent);
  // `dst` learns everything `src` has seen (a happens-before edge).
  void Join(int dst, int src);
  void JoinClock(int dst, const VectorClock& clock);

  void OnAllocate(uint64_t buffer, std::string label, int64_t bytes,
                  bool initialized);
  // Checks that every access to `buffer` is ordered before the free by
  // `agent` (the host), then forgets the buffer.
  void OnFree(uint64_t buffer, int agent, const OpInfo& op);

  // Records and checks one access by op.agent at its current clock.
  void OnAccess(uint64_t buffer, int64_t offset, int64_t bytes, bool write,
                const OpInfo& op);

  // Drops history every future access is ordered after.
  void Prune();

  const std::vector<RaceReport>& reports() const { return reports_; }
  int64_t history_size() const;

 private:
  struct Agent {
    std::string name;
    VectorClock clock;
  };
  struct Access {
    int agent;
    uint64_t epoch;
    bool write;
    int64_t begin;
    int64_t end;
    int op;        // index into ops_
    uint64_t seq;  // order of recording within the buffer
  };
  // Accesses by (first byte, recording order).
  using AccessMap = std::map<std::pair<int64_t, uint64_t>, Access>;
  struct BufferState {
    std::string label;
    int64_t bytes = 0;
    // A buffer's accesses by length class: class k holds those of length in
    // [2^k, 2^(k+1)), so one overlapping [begin, end) starts at or after
    // begin - 2^(k+1).
    std::map<int, AccessMap> accesses;
    uint64_t next_seq = 0;
    std::map<int64_t, int64_t> written;  // begin -> end, disjoint, merged
  };

  bool OrderedBefore(const Access& a, int agent) const;
  // The accesses of `state` overlapping [begin, end), in recording order.
  static std::vector<std::pair<AccessMap*, AccessMap::iterator>> Overlapping(
      BufferState& state, int64_t begin, int64_t end);
  // Every access of `state`, in recording order.
  static std::vector<const Access*> InOrder(const BufferState& state);
  static int LengthClass(int64_t bytes);
  int InternOp(const OpInfo& op);
  void Report(RaceReport report);
  // `op` touched (or freed) a buffer that is not live.
  void ReportUseAfterFree(uint64_t buffer, int64_t offset, int64_t bytes,
                          bool write, const OpInfo& op);
  void MarkWritten(BufferState& state, int64_t begin, int64_t end);
  // First byte in [begin, end) never written, or -1.
  int64_t FirstUnwritten(const BufferState& state, int64_t begin,
                         int64_t end) const;

  const int rank_;
  std::vector<Agent> agents_;
  absl::flat_hash_map<uint64_t, BufferState> buffers_;
  absl::flat_hash_map<uint64_t, std::pair<std::string, OpInfo>> freed_;
  // Ops referenced by history; compacted on Prune.
  std::vector<OpInfo> ops_;
  std::vector<RaceReport> reports_;
  absl::flat_hash_set<std::string> reported_;  // dedupes repeated pairs
};

}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_RACE_DETECTOR_H_
