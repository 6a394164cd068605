// One global order of a schedule's ops for a single process (schedule.h):
// round-robin over devices, each running as many of its next ops as are ready.
#include <stdexcept>

#include "pipeline/schedule.h"

namespace slowpipe::netmodel {

std::vector<ScheduledOp> single_process_order(const Schedule& schedule) {
  check_schedule(schedule);
  const int devices = schedule.devices;
  const int C = schedule.chunks;
  const int M = schedule.microbatches;
  const auto idx = [M](int c, int m) { return static_cast<size_t>(c) * M + m; };
  // Per (chunk, micro-batch): forward done, (input) backward done.
  std::vector<char> fwd_done(static_cast<size_t>(C) * M, 0);
  std::vector<char> bwd_done(fwd_done.size(), 0);
  size_t total = 0;
  for (const auto& list : schedule.per_device) total += list.size();
  std::vector<size_t> next(devices, 0);
  std::vector<ScheduledOp> order;
  order.reserve(total);
  while (order.size() < total) {
    bool progress = false;
    for (int d = 0; d < devices; ++d) {
      const auto& list = schedule.per_device[d];
      while (next[d] < list.size()) {
        const ScheduledOp& op = list[next[d]];
        const int c = op.chunk, m = op.microbatch;
        bool ready = false;
        switch (op.pass) {
          case Pass::kForward:
            ready = c == 0 || fwd_done[idx(c - 1, m)];
            break;
          case Pass::kBackward:
          case Pass::kBackwardInput:
            ready = fwd_done[idx(c, m)] && (c == C - 1 || bwd_done[idx(c + 1, m)]);
            break;
          case Pass::kBackwardWeight:
            ready = bwd_done[idx(c, m)] != 0;
            break;
        }
        if (!ready) break;
        if (op.pass == Pass::kForward) fwd_done[idx(c, m)] = 1;
        if (op.pass == Pass::kBackward || op.pass == Pass::kBackwardInput) {
          bwd_done[idx(c, m)] = 1;
        }
        order.push_back(op);
        ++next[d];
        progress = true;
      }
    }
    if (!progress) throw std::logic_error("schedule: deadlock, no device can run its next op");
  }
  return order;
}

}  // namespace slowpipe::netmodel
