// The op trace one step of a pipeline schedule would record, built from the
// schedule alone: what the engine replays for the closed-form tests, the
// preflight's estimate and the what-if front (whatif/synthetic_trace.h fills
// each op from a model shape). The caller's `fill` gives each op its costs.
//
// Op order per (replica, device): the schedule's order, each forward followed
// by its activation send and each (input) backward by its gradient send when
// the neighbouring chunk lives on another device; then, per chunk of the
// device, an all-reduce when replicas > 1 and the optimizer.
#pragma once

#include <functional>
#include <string>

#include "pipeline/schedule.h"
#include "netmodel/trace.h"

namespace slowpipe::netmodel {

// Builds the op skeleton; `fill` sets compute_s, flops, bytes, ... of each op.
// `compact` (and replicas > 1): replica 0's ops only, StepTrace::replicated.
StepTrace build_trace(const Schedule& schedule, const std::string& name, int replicas,
                      const std::function<void(TraceOp&)>& fill, bool compact = false);
// The same for make_schedule(schedule, stages, microbatches, virtual_stages).
StepTrace build_trace(const std::string& schedule, int stages, int microbatches, int replicas,
                      const std::function<void(TraceOp&)>& fill, int virtual_stages = 1);

}  // namespace slowpipe::netmodel
