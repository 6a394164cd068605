// The bandwidth sweep of `slowpipe timing`.
#include "netmodel/what_if.h"

#include <cstdio>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/replay.h"
#include "netmodel/schedule.h"

namespace slowpipe::netmodel {

void describe_options(WhatIfConfig& c, slowpipe::OptionSet& o) {
  std::string shapes, scheds;
  for (const auto& s : model_shapes()) shapes += (shapes.empty() ? "" : ", ") + s.name;
  for (const auto& s : schedules()) scheds += (scheds.empty() ? "" : ", ") + s.name;
  o.add_custom(
      "timing.model", "choice", "model shape preset (" + shapes + ")",
      [&c](const std::string& v) {
        find_model_shape("timing.model", v);
        c.model = v;
      },
      [&c] { return c.model; });
  o.add("timing.fw", c.specs.forward, "channel spec of forward activations (none = fp32)");
  o.add("timing.bw", c.specs.backward, "channel spec of backward activation gradients");
  o.add("timing.grad", c.specs.gradient, "channel spec of the data-parallel gradient all-reduce");
  o.add_custom(
      "timing.schedule", "choice", "pipeline schedule (" + scheds + ")",
      [&c](const std::string& v) {
        make_schedule(v, 1, 1);
        c.schedule = v;
      },
      [&c] { return c.schedule; });
  o.add("timing.replicas", c.replicas, "data-parallel replicas (ring all-reduce)", 1, 4096);
  o.add_custom(
      "timing.device", "choice", "device of the synthetic compute times (V100, A100, H100)",
      [&c](const std::string& v) {
        find_device("timing.device", v);
        c.device = v;
      },
      [&c] { return c.device; });
  o.add("timing.stages", c.stages, "pipeline stages (0: the shape's)", 0, 4096);
  o.add("timing.batch", c.batch, "samples per replica and step (0: the shape's)", 0, 1 << 24);
  o.add("timing.microbatch", c.microbatch_size, "samples per micro-batch (0: the shape's)", 0,
        1 << 20);
  o.add_custom(
      "timing.bandwidth", "list", "bandwidths to sweep (10Gbps,1Gbps,500Mbps,300Mbps,100Mbps)",
      [&c](const std::string& v) {
        // Every element must be a bandwidth: "1Gbps,,100Mbps" and "" are errors.
        std::vector<double> out;
        std::string cur;
        for (size_t i = 0; i <= v.size(); ++i) {
          if (i == v.size() || v[i] == ',') {
            if (cur.find_first_not_of(" \t") == std::string::npos) {
              throw UsageError("bad value for 'timing.bandwidth': " +
                               std::string(v.empty() ? "empty list" : "empty element") + " in '" +
                               v + "' (a comma list of bandwidths, e.g. 10Gbps,1Gbps)");
            }
            out.push_back(parse_bandwidth_bps("timing.bandwidth", cur));
            cur.clear();
          } else {
            cur += v[i];
          }
        }
        c.bandwidths_bps = out;
      },
      [&c] {
        std::string s;
        for (double b : c.bandwidths_bps) s += (s.empty() ? "" : ",") + format_bandwidth(b);
        return s;
      });
}

WhatIfResult run_what_if(const WhatIfConfig& c, const NetConfig& net,
                         const WireBytesFn& wire_bytes) {
  WhatIfResult result;
  ModelShape shape = find_model_shape("timing.model", c.model);
  if (c.stages > 0) shape.stages = c.stages;
  if (c.batch > 0) shape.batch = c.batch;
  if (c.microbatch_size > 0) shape.microbatch_size = c.microbatch_size;
  result.shape = shape;
  const DevicePreset& device = find_device("timing.device", c.device);
  const StepTrace fp32 =
      make_synthetic_trace(shape, c.schedule, c.replicas, CodecSpecs{}, wire_bytes, device);
  const StepTrace compressed =
      make_synthetic_trace(shape, c.schedule, c.replicas, c.specs, wire_bytes, device);
  const std::vector<int64_t> boundary = {shape.microbatch_size, shape.seq, shape.hidden};
  result.fp32_activation_bytes = wire_bytes("none", boundary);
  result.activation_bytes = wire_bytes(c.specs.forward, boundary);
  result.gradient_bytes = wire_bytes(c.specs.backward, boundary);
  for (double bps : c.bandwidths_bps) {
    NetConfig point = net;
    point.bandwidth_bps = bps;
    Simulator sim_fp32(point), sim(point);  // same seed: the same jitter draws
    const Timeline a = sim_fp32.replay(fp32);
    const Timeline b = sim.replay(compressed);
    WhatIfRow row;
    row.bandwidth_bps = bps;
    row.fp32_step_s = a.step_s;
    row.step_s = b.step_s;
    row.samples_per_s = b.step_s > 0 ? shape.batch * c.replicas / b.step_s : 0;
    row.speedup = b.step_s > 0 ? a.step_s / b.step_s : 0;
    row.bubble_fraction = b.bubble_fraction;
    result.rows.push_back(row);
  }
  return result;
}

void print_what_if(const WhatIfConfig& c, const NetConfig& net, const WhatIfResult& r,
                   std::ostream& os) {
  const ModelShape& m = r.shape;
  os << "model " << m.name << ": " << m.layers << " layers, d " << m.hidden << ", seq " << m.seq
     << ", " << m.stages << " stages, micro-batch " << m.microbatch_size << ", batch " << m.batch
     << " x " << c.replicas << " replica(s), schedule " << c.schedule << ", device " << c.device
     << "\n";
  os << "codecs fw " << c.specs.forward << ", bw " << c.specs.backward << ", grad "
     << c.specs.gradient << "; activation message " << format_bytes(r.activation_bytes) << " (fp32 "
     << format_bytes(r.fp32_activation_bytes) << "), gradient message "
     << format_bytes(r.gradient_bytes) << "\n";
  NetConfig shown = net;
  os << "network " << describe(shown) << " (bandwidth swept), compute " << net.compute << "\n";
  char line[160];
  std::snprintf(line, sizeof line, "%-10s %13s %13s %13s %9s %8s\n", "bandwidth", "fp32 step s",
                "step s", "samples/s", "speed-up", "bubble");
  os << line;
  for (const WhatIfRow& row : r.rows) {
    std::snprintf(line, sizeof line, "%-10s %13.4f %13.4f %13.3f %8.2fx %7.1f%%\n",
                  format_bandwidth(row.bandwidth_bps).c_str(), row.fp32_step_s, row.step_s,
                  row.samples_per_s, row.speedup, row.bubble_fraction * 100);
    os << line;
  }
}

void run_timing(const WhatIfConfig& c, const NetConfig& net, const WireBytesFn& wire_bytes,
                std::ostream& os) {
  print_what_if(c, net, run_what_if(c, net, wire_bytes), os);
}

}  // namespace slowpipe::netmodel
