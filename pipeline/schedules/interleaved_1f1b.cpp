// Interleaved 1F1B (Narayanan et al. 2021, Megatron-LM's virtual pipeline):
// each of the S devices holds v model chunks, chunk c on device c mod S, so a
// micro-batch passes every device v times. Forwards walk the chunks of a device
// in groups of S micro-batches (chunk 0 for micro-batches 0..S-1, then chunk 1
// for the same ones, ...), backwards the same groups with the chunks reversed.
// Device d runs (S-d-1)*2 + (v-1)*S warm-up forwards, then alternates, then
// drains. M must be a multiple of S. Bubble with equal op times:
// (S-1)/(v*M + S-1) of the step, v times smaller than 1F1B's (docs/schedules.md).
// With v = 1 it is exactly 1F1B.
#include <algorithm>

#include "common/errors.h"
#include "pipeline/schedule.h"

namespace slowpipe::netmodel {

ScheduleEntry interleaved_1f1b_schedule() {
  ScheduleEntry e{
      "interleaved",
      "interleaved 1F1B (virtual stages): v chunks per stage, bubble v times smaller",
      [](const ScheduleRequest& r) {
        const int S = r.devices, M = r.microbatches, v = r.virtual_stages;
        if (v > 1 && M % S != 0) {
          throw UsageError("schedule 'interleaved': pipeline.microbatches = " + std::to_string(M) +
                           " must be a multiple of pipeline.stages = " + std::to_string(S));
        }
        Schedule s = empty_schedule(r, false);
        const int total = M * v;  // ops of each kind per device
        // The k-th forward (backward) of device d: its micro-batch and local chunk.
        const auto microbatch = [S, v](int k) { return (k / (S * v)) * S + k % S; };
        const auto forward_chunk = [S, v](int k) { return (k / S) % v; };
        const auto backward_chunk = [S, v](int k) { return v - 1 - (k / S) % v; };
        for (int d = 0; d < S; ++d) {
          auto& out = s.per_device[d];
          const int warmup = std::min(v == 1 ? S - d - 1 : (S - d - 1) * 2 + (v - 1) * S, total);
          int f = 0, b = 0;
          const auto forward = [&] {
            out.push_back({Pass::kForward, forward_chunk(f) * S + d, microbatch(f)});
            ++f;
          };
          const auto backward = [&] {
            out.push_back({Pass::kBackward, backward_chunk(b) * S + d, microbatch(b)});
            ++b;
          };
          while (f < warmup) forward();
          while (f < total) {
            forward();
            backward();
          }
          while (b < total) backward();
        }
        return s;
      }};
  e.virtual_stages = true;
  return e;
}

}  // namespace slowpipe::netmodel
