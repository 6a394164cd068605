// Pipeline schedules: the order in which each stage runs the forward and
// backward passes of the micro-batches of one step.
//
//   gpipe  all forwards F(s,0..M-1), then all backwards in reverse order
//          (Huang et al., GPipe, 2019): M activations in flight per stage;
//   1f1b   PipeDream-Flush / Megatron non-interleaved 1F1B (Narayanan et al.,
//          2021): S-s-1 warm-up forwards, then alternate one forward and one
//          backward, then drain: at most S-s activations in flight on stage s.
// Both have the same bubble: (S-1)/(M+S-1) of the step with equal op times.
// The pipeline engine (sim/) reuses these orders. Leaves out interleaved
// (virtual-stage) schedules and zero-bubble variants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace slowpipe::netmodel {

struct ScheduledOp {
  bool backward = false;  // F(stage, microbatch) or B(stage, microbatch)
  int32_t stage = 0;
  int32_t microbatch = 0;
  bool operator==(const ScheduledOp& o) const {
    return backward == o.backward && stage == o.stage && microbatch == o.microbatch;
  }
};

struct ScheduleInfo {
  std::string name;
  std::string description;  // one line
};
const std::vector<ScheduleInfo>& schedules();

// Per-stage ordered op lists: result[s] is stage s's order. Throws UsageError
// for an unknown name (listing the known ones) or stages/microbatches < 1.
std::vector<std::vector<ScheduledOp>> make_schedule(const std::string& name, int stages,
                                                    int microbatches);

}  // namespace slowpipe::netmodel
