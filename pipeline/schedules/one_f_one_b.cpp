// 1F1B (PipeDream-Flush, Megatron's non-interleaved schedule; Narayanan et al.
// 2021): S-s-1 warm-up forwards, then one forward and one backward, then the
// drain; at most S-s activations in flight on stage s. Same bubble as GPipe:
// (S-1)/(M+S-1) with equal op times (docs/schedules.md).
#include <algorithm>

#include "pipeline/schedule.h"

namespace slowpipe::netmodel {

ScheduleEntry one_f_one_b_schedule() {
  return {"1f1b", "1F1B (PipeDream-Flush): warm-up, one forward one backward, drain",
          [](const ScheduleRequest& r) {
            Schedule s = empty_schedule(r, false);
            const int S = r.devices, M = r.microbatches;
            for (int d = 0; d < S; ++d) {
              auto& out = s.per_device[d];
              const int warmup = std::min(S - d - 1, M);
              int next_f = 0, next_b = 0;
              for (; next_f < warmup; ++next_f) out.push_back({Pass::kForward, d, next_f});
              while (next_f < M) {
                out.push_back({Pass::kForward, d, next_f++});
                out.push_back({Pass::kBackward, d, next_b++});
              }
              while (next_b < M) out.push_back({Pass::kBackward, d, next_b++});
            }
            return s;
          }};
}

}  // namespace slowpipe::netmodel
