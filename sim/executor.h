// Turns a schedule (each device's ordered list of passes, netmodel/schedule.h)
// into one global order that a single process can execute: every device keeps
// its own order, and an op runs only once its input exists — F(c,m) after
// F(c-1,m) has sent its activation, the (input) backward of (c,m) after that of
// (c+1,m) has sent its gradient (the last chunk's after its own forward), the
// weight backward of (c,m) after its input backward. Channels therefore see
// their messages in exactly the order a real cluster running the same schedule
// would produce. Plain C++; no libtorch (netmodel/schedule_order.cpp).
#pragma once

#include <vector>

#include "netmodel/schedule.h"

namespace slowpipe::sim {

// A pass of one chunk and micro-batch, as the schedules list them.
using PipelineOp = netmodel::ScheduledOp;

// Throws std::logic_error if the device lists deadlock or do not hold every
// pass exactly once per (chunk, micro-batch) (netmodel::check_schedule).
inline std::vector<PipelineOp> global_order(const netmodel::Schedule& schedule) {
  return netmodel::single_process_order(schedule);
}

}  // namespace slowpipe::sim
