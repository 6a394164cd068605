// Retiming: a finished (or killed) run's simulated wall clock on other
// network settings, without training it again (`slowpipe retime`,
// docs/retime.md).
//
// The network changes no number a run computes, only its simulated time. With
// a machine-independent compute clock (net.compute = analytic:DEVICE or
// fixed:S[/B]) every step's time is a replay of its op trace, whose skeleton
// the engine rebuilds from the logged configuration and whose message bytes
// the train table logs per boundary and step (sim/internal/retime_trace.h).
// retime_run first replays every step at the logged network and refuses the
// run unless that reproduces the logged sim_step_time_s and sim_time_s to
// `tolerance`; then it replays every step at the new settings and writes a
// copy of the log whose config says the new network, whose sim_* columns and
// sim_time_s attribute are the new ones, and whose root attributes name the
// source (retime.source, retime.sets). Everything else is copied unchanged.
// Refused (UsageError): host-timed clocks (measured, scaled, calibrated: the
// log does not hold each op's measured seconds, so their replay would not be
// exact), keys other than net.*, compress.grad_sync = momentum, distributed
// runs, batches of different sizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "netmodel/compute_model.h"

namespace slowpipe::sim {

struct RetimeRequest {
  std::string source;             // the run log to retime
  std::string out;                // the retimed copy (a file written before by retime is replaced)
  std::vector<std::string> sets;  // "net.KEY=VALUE", applied over the logged configuration
  double tolerance = 1e-9;        // relative, of the replay at the logged network
};

struct RetimeReport {
  int64_t steps = 0;
  double source_sim_time_s = 0;  // logged
  double sim_time_s = 0;         // at the new settings
  // Largest relative difference between the replay at the logged network and
  // the logged sim_step_time_s and sim_time_s of any step (<= tolerance).
  double own_max_rel_diff = 0;
  // Steps at the new settings slower than at the logged ones.
  int64_t slower_steps = 0;
};

RetimeReport retime_run(const RetimeRequest& request);

// Whether `spec` (net.compute) times compute without this machine's clock.
bool machine_independent_clock(const netmodel::ComputeSpec& spec);

}  // namespace slowpipe::sim
