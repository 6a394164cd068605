// What-if timing without training (`slowpipe timing`): a model shape, codec
// specs, a schedule, replicas and a network -> step time, throughput and
// speed-up over fp32 for a sweep of bandwidths. The latency, efficiency,
// jitter and compute model come from the NetConfig; each sweep point replaces
// its bandwidth. Runs in milliseconds: two replays per bandwidth.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "common/options.h"
#include "netmodel/net_config.h"
#include "netmodel/synthetic_trace.h"

namespace slowpipe::netmodel {

struct WhatIfConfig {
  std::string model = "gpt2-xl";
  CodecSpecs specs;  // fp32 ("none") by default
  std::string schedule = "gpipe";
  int replicas = 1;
  std::string device = "A100";  // compute seconds of the synthetic trace
  int stages = 0;               // 0: the shape's
  int batch = 0;                // 0: the shape's (samples per replica and step)
  int microbatch_size = 0;      // 0: the shape's
  std::vector<double> bandwidths_bps = {10e9, 1e9, 500e6, 300e6, 100e6};
};

// Binds `timing.model`, `timing.fw`, `timing.bw`, `timing.grad`,
// `timing.schedule`, `timing.replicas`, `timing.device`, `timing.stages`,
// `timing.batch`, `timing.microbatch`, `timing.bandwidth` (a comma list).
void describe_options(WhatIfConfig& config, slowpipe::OptionSet& options);

struct WhatIfRow {
  double bandwidth_bps = 0;
  double fp32_step_s = 0;
  double step_s = 0;
  double samples_per_s = 0;
  double speedup = 0;  // fp32_step_s / step_s
  double bubble_fraction = 0;
};

struct WhatIfResult {
  ModelShape shape;  // after the config's overrides
  uint64_t fp32_activation_bytes = 0, activation_bytes = 0, gradient_bytes = 0;
  std::vector<WhatIfRow> rows;
};

WhatIfResult run_what_if(const WhatIfConfig& config, const NetConfig& net,
                         const WireBytesFn& wire_bytes);
void print_what_if(const WhatIfConfig& config, const NetConfig& net, const WhatIfResult& result,
                   std::ostream& os);
// Both: what `slowpipe timing` does.
void run_timing(const WhatIfConfig& config, const NetConfig& net, const WireBytesFn& wire_bytes,
                std::ostream& os);

}  // namespace slowpipe::netmodel
