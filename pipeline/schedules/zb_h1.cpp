// ZB-H1 (Qi et al. 2023, zero-bubble pipeline parallelism, the schedule with
// 1F1B's peak memory): the backward is split into B (the input gradient, which
// the previous stage waits for) and W (the weight gradients, which only the
// optimizer needs). Stage d runs S-d warm-up forwards, then after each B its
// oldest pending W once more than d are pending, then a forward; the W passes
// left over fill the drain, where 1F1B waits. At most S activations are held
// on any stage (1F1B's peak, on stage 0). Bubble with equal F, B, W times:
// (S-1)/(3M + S-1), a third of 1F1B's (docs/schedules.md).
#include <algorithm>

#include "pipeline/schedule.h"

namespace slowpipe::netmodel {

ScheduleEntry zb_h1_schedule() {
  return {"zb-h1",
          "zero-bubble ZB-H1: backward split into input and weight passes, W fills the drain",
          [](const ScheduleRequest& r) {
            Schedule s = empty_schedule(r, true);
            const int S = r.devices, M = r.microbatches;
            for (int d = 0; d < S; ++d) {
              auto& out = s.per_device[d];
              int f = 0, b = 0, w = 0;
              for (; f < std::min(S - d, M); ++f) out.push_back({Pass::kForward, d, f});
              while (b < M) {
                out.push_back({Pass::kBackwardInput, d, b++});
                if (b - w > d) out.push_back({Pass::kBackwardWeight, d, w++});
                if (f < M) out.push_back({Pass::kForward, d, f++});
              }
              while (w < M) out.push_back({Pass::kBackwardWeight, d, w++});
            }
            return s;
          }};
}

}  // namespace slowpipe::netmodel
