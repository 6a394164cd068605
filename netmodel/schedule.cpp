// The schedule family: each schedule is a function from (S, M) to per-stage
// orders, registered by name with a one-line description.
#include "netmodel/schedule.h"

#include <algorithm>
#include <functional>

#include "common/errors.h"

namespace slowpipe::netmodel {
namespace {

using Orders = std::vector<std::vector<ScheduledOp>>;

Orders gpipe(int stages, int microbatches) {
  Orders out(stages);
  for (int s = 0; s < stages; ++s) {
    for (int m = 0; m < microbatches; ++m) out[s].push_back({false, s, m});
    for (int m = microbatches - 1; m >= 0; --m) out[s].push_back({true, s, m});
  }
  return out;
}

Orders one_f_one_b(int stages, int microbatches) {
  Orders out(stages);
  for (int s = 0; s < stages; ++s) {
    const int warmup = std::min(stages - s - 1, microbatches);
    int next_f = 0, next_b = 0;
    for (; next_f < warmup; ++next_f) out[s].push_back({false, s, next_f});
    while (next_f < microbatches) {
      out[s].push_back({false, s, next_f++});
      out[s].push_back({true, s, next_b++});
    }
    while (next_b < microbatches) out[s].push_back({true, s, next_b++});
  }
  return out;
}

struct Entry {
  ScheduleInfo info;
  std::function<Orders(int, int)> make;
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      {{"gpipe", "GPipe: all forwards, then all backwards (M activations in flight)"}, gpipe},
      {{"1f1b", "1F1B (PipeDream-Flush): warm-up, one forward one backward, drain"}, one_f_one_b},
  };
  return entries;
}

}  // namespace

const std::vector<ScheduleInfo>& schedules() {
  static const std::vector<ScheduleInfo> infos = [] {
    std::vector<ScheduleInfo> v;
    for (const auto& e : registry()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

std::vector<std::vector<ScheduledOp>> make_schedule(const std::string& name, int stages,
                                                    int microbatches) {
  if (stages < 1 || microbatches < 1) {
    throw UsageError("schedule '" + name + "': stages and micro-batches must be >= 1");
  }
  std::string names;
  for (const auto& e : registry()) {
    if (e.info.name == name) return e.make(stages, microbatches);
    names += (names.empty() ? "" : ", ") + e.info.name;
  }
  throw UsageError("unknown schedule '" + name + "' (known: " + names + ")");
}

}  // namespace slowpipe::netmodel
