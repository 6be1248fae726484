// Copyright 2026 The zero3 Authors.

#include "core/zero/sync_points.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace zero3 {
namespace zero {
namespace {

struct Entry {
  Sync sync;
  const char* name;
  const char* description;
};

constexpr Entry kEntries[] = {
    {Sync::kGradOffloadBeforeStep, "grad-offload-before-step",
     "host waits for the reduce stream (gradient D2H copies, norm) before "
     "the optimizer step"},
    {Sync::kGatherBeforeCompute, "gather-before-compute",
     "compute stream waits for a module's all-gathers before using its "
     "parameters"},
    {Sync::kParamBufferReuse, "param-buffer-reuse",
     "all-gather stream waits for the kernels reading a gathered buffer "
     "before reusing it"},
    {Sync::kGradsReadyBeforeReduce, "grads-ready-before-reduce",
     "reduce stream waits for a module's backward before reducing its "
     "gradients"},
    {Sync::kGradSlotReuse, "grad-slot-reuse",
     "compute stream waits for the reduce stream to copy a gradient slot out "
     "before overwriting it"},
    {Sync::kParamsUpdatedBeforeGather, "params-updated-before-gather",
     "all-gather stream waits for the updated working shards before the next "
     "step's gathers"},
    {Sync::kLossRead, "loss-read",
     "host waits for the loss copy before reading the loss"},
};

const Entry& EntryOf(Sync sync) {
  for (const Entry& e : kEntries) {
    if (e.sync == sync) return e;
  }
  return kEntries[0];
}

int EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1,
                         prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

absl::string_view SyncName(Sync sync) { return EntryOf(sync).name; }
absl::string_view SyncDescription(Sync sync) {
  return EntryOf(sync).description;
}

std::vector<Sync> AllSyncs() {
  std::vector<Sync> all;
  for (const Entry& e : kEntries) all.push_back(e.sync);
  return all;
}

absl::StatusOr<Sync> ParseSync(absl::string_view name) {
  const Entry* best = nullptr;
  int best_distance = 1 << 30;
  std::vector<std::string> names;
  for (const Entry& e : kEntries) {
    if (name == e.name) return e.sync;
    names.push_back(e.name);
    const int d = EditDistance(name, e.name);
    if (d < best_distance) {
      best_distance = d;
      best = &e;
    }
  }
  std::string hint;
  if (best != nullptr && best_distance <= 4) {
    hint = absl::StrCat(" (did you mean '", best->name, "'?)");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown synchronization '", name, "'", hint,
      "; the engine's synchronizations are: ", absl::StrJoin(names, ", ")));
}

bool SyncPoints::enabled(Sync sync) const {
  return (dropped_ & (1u << static_cast<int>(sync))) == 0;
}

void SyncPoints::Drop(Sync sync) { dropped_ |= 1u << static_cast<int>(sync); }

std::vector<std::string> SyncPoints::dropped() const {
  std::vector<std::string> out;
  for (Sync s : AllSyncs()) {
    if (!enabled(s)) out.emplace_back(SyncName(s));
  }
  return out;
}

}  // namespace zero
}  // namespace zero3
