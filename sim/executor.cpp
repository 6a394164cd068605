// Global op order for the single-process executor: round-robin over stages,
// each stage running as many of its next ops as are ready.
#include "sim/executor.h"

#include <stdexcept>
#include <string>

namespace slowpipe::sim {

std::vector<PipelineOp> global_order(const std::vector<std::vector<PipelineOp>>& per_stage,
                                     int microbatches) {
  const int stages = static_cast<int>(per_stage.size());
  const auto idx = [microbatches](int s, int m) {
    return static_cast<size_t>(s) * microbatches + m;
  };
  std::vector<char> fwd_done(static_cast<size_t>(stages) * microbatches, 0);
  std::vector<char> bwd_done(fwd_done.size(), 0);
  size_t total = 0;
  for (int s = 0; s < stages; ++s) {
    for (const auto& op : per_stage[s]) {
      if (op.stage != s || op.microbatch < 0 || op.microbatch >= microbatches) {
        throw std::logic_error(
            "schedule: op listed on the wrong stage or micro-batch out of range");
      }
    }
    total += per_stage[s].size();
  }
  if (total != 2 * fwd_done.size()) {
    throw std::logic_error(
        "schedule: expected one forward and one backward per stage and micro-batch");
  }
  std::vector<size_t> next(stages, 0);
  std::vector<PipelineOp> order;
  order.reserve(total);
  while (order.size() < total) {
    bool progress = false;
    for (int s = 0; s < stages; ++s) {
      while (next[s] < per_stage[s].size()) {
        const PipelineOp& op = per_stage[s][next[s]];
        const int m = op.microbatch;
        bool ready;
        if (!op.backward) {
          ready = s == 0 || fwd_done[idx(s - 1, m)];
        } else {
          ready = fwd_done[idx(s, m)] && (s == stages - 1 || bwd_done[idx(s + 1, m)]);
        }
        if (!ready) break;
        char& done = !op.backward ? fwd_done[idx(s, m)] : bwd_done[idx(s, m)];
        if (done) throw std::logic_error("schedule: op listed twice");
        done = 1;
        order.push_back(op);
        ++next[s];
        progress = true;
      }
    }
    if (!progress) throw std::logic_error("schedule: deadlock, no stage can run its next op");
  }
  return order;
}

}  // namespace slowpipe::sim
