// Turns a schedule (each stage's ordered list of forward and backward ops) into
// one global order that a single process can execute: every stage keeps its own
// order, and an op runs only once its input exists — F(s,m) after F(s-1,m) has
// sent its activation, B(s,m) after B(s+1,m) has sent its gradient (the last
// stage's B(S-1,m) after its own F(S-1,m)). Channels therefore see their messages
// in exactly the order a real cluster running the same schedule would produce.
// Plain C++; no libtorch.
#pragma once

#include <vector>

#include "netmodel/schedule.h"

namespace slowpipe::sim {

// F(s, m) or B(s, m), as the schedules of netmodel/schedule.h list them.
using PipelineOp = netmodel::ScheduledOp;

// Throws std::logic_error if the lists deadlock or do not hold F and B exactly
// once per (stage, micro-batch).
std::vector<PipelineOp> global_order(const std::vector<std::vector<PipelineOp>>& per_stage,
                                     int microbatches);

}  // namespace slowpipe::sim
