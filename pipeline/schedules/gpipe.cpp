// GPipe (Huang et al. 2019): every forward, then every backward in reverse
// micro-batch order; M activations in flight per stage. Bubble with equal op
// times: (S-1)/(M+S-1) of the step (docs/schedules.md).
#include "pipeline/schedule.h"

namespace slowpipe::netmodel {

ScheduleEntry gpipe_schedule() {
  return {"gpipe", "GPipe: all forwards, then all backwards (M activations in flight)",
          [](const ScheduleRequest& r) {
            Schedule s = empty_schedule(r, false);
            for (int d = 0; d < r.devices; ++d) {
              for (int m = 0; m < r.microbatches; ++m) {
                s.per_device[d].push_back({Pass::kForward, d, m});
              }
              for (int m = r.microbatches - 1; m >= 0; --m) {
                s.per_device[d].push_back({Pass::kBackward, d, m});
              }
            }
            return s;
          }};
}

}  // namespace slowpipe::netmodel
