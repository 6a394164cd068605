// Model shapes from their dimensions for `slowpipe timing` (the timing.layers,
// timing.d_model, timing.vocab, timing.seq, timing.mlp_width keys over the
// chosen shape), timing.replicas, a preset's defaults for keys outside the shape
// (apply_preset_defaults), the token ids beside subspace values, and the
// printed price of a run (steady-state step, record, T). Leaves out: FLOPs
// and parameters (model_shape.cpp), the replays (what_if.cpp).
#include <cstdio>
#include <string>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/internal/what_if_parts.h"

namespace slowpipe::netmodel {

void describe_shape_options(WhatIfConfig& c, slowpipe::OptionSet& o) {
  o.add("timing.layers", c.layers,
        "transformer layers (0: the shape's; split evenly over the stages)", 0, 1 << 20);
  o.add("timing.d_model", c.d_model, "model width d (0: the shape's)", 0, 1 << 24);
  o.add("timing.vocab", c.vocab, "vocabulary size (0: the shape's)", 0, int64_t{1} << 32);
  o.add("timing.seq", c.seq, "sequence length in tokens (0: the shape's)", 0, 1 << 24);
  o.add("timing.mlp_width", c.mlp_width, "MLP hidden width (0: the shape's, MLP ratio x d_model)",
        0, int64_t{1} << 30);
}

void describe_replicas_option(WhatIfConfig& c, slowpipe::OptionSet& o) {
  o.add_custom(
      "timing.replicas", "int",
      "data-parallel replicas (ring all-reduce; timing.grad_sync); default the preset's, else 1; "
      "at most 4096 where they differ (net.jitter, net.links, a swarm's home links)",
      [&c](const std::string& v) {
        if (v.empty()) throw UsageError("empty value for 'timing.replicas' (expected int)");
        const int64_t n = parse_int("timing.replicas", v);
        if (n < 1 || n > kMaxTimingReplicas) {
          throw UsageError("bad value for 'timing.replicas': " + v + " is outside [1, " +
                           std::to_string(kMaxTimingReplicas) + "]");
        }
        c.replicas = static_cast<int>(n);
        c.replicas_given = true;
      },
      [&c] { return std::to_string(c.replicas); });
}

void apply_shape_keys(const WhatIfConfig& c, ModelShape& shape) {
  if (c.layers > 0 && c.layers != shape.layers) {
    shape.layers = c.layers;
    shape.stage_layers.clear();  // a preset's split no longer fits: even split
  }
  if (c.d_model > 0) shape.hidden = c.d_model;
  if (c.vocab > 0) shape.vocab = c.vocab;
  if (c.seq > 0) shape.seq = c.seq;
  if (c.mlp_width > 0) shape.mlp_width = c.mlp_width;
}

void apply_preset_defaults(WhatIfConfig& c, NetConfig& net) {
  if (c.preset.empty()) return;
  const TimingPreset& p = find_timing_preset("timing.preset", c.preset);
  if (!p.fw.empty() && !c.fw_given) c.specs.forward = p.fw;
  if (!p.bw.empty() && !c.bw_given) c.specs.backward = p.bw;
  if (!p.baseline.empty() && !c.baseline_given) c.baseline = p.baseline;
  if (p.bandwidth_bps > 0 && !c.bandwidth_given) c.bandwidths_bps = {p.bandwidth_bps};
  if (p.replicas > 0 && !c.replicas_given) c.replicas = p.replicas;
  if (p.latency_s >= 0 && net.latency_s < 0) net.latency_s = p.latency_s;
  if (!p.link_model.empty() && net.link_model.empty()) net.link_model = p.link_model;
  if (p.subspace > 0 && c.subspace == 0) c.subspace = p.subspace;
  if (p.token_id_bytes > 0 && c.token_id_bytes == 0) c.token_id_bytes = p.token_id_bytes;
}

WireBytesFn with_token_ids(const ModelShape& shape, int64_t id_bytes,
                           const WireBytesFn& wire_bytes) {
  if (shape.subspace == 0 || id_bytes == 0) return wire_bytes;
  return [&wire_bytes, id_bytes](const std::string& spec, const std::vector<int64_t>& dims) {
    const uint64_t b = wire_bytes(spec, dims);
    if (dims.size() != 3) return b;  // a parameter-gradient message [P]
    return b + static_cast<uint64_t>(dims[0] * dims[1] * id_bytes);
  };
}

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

void print_run_price(const WhatIfConfig& c, const WhatIfResult& res, std::ostream& os) {
  const double record_s =
      c.preset.empty() ? 0 : find_timing_preset("timing.preset", c.preset).record_step_s;
  if (record_s <= 0 && c.steps <= 0) return;
  os << "\nsteady-state step (the compressed column's step s)\n";
  for (const WhatIfRow& row : res.rows) {
    os << format_bandwidth(row.bandwidth_bps) << ": step " << fmt("%.3f", row.step_s) << " s";
    if (record_s > 0) {
      os << " (the preset's record " << fmt("%.3f", record_s)
         << " s: " << fmt("%+.2f", (row.step_s / record_s - 1) * 100) << "%)";
    }
    if (c.steps > 0) {
      os << "; T = " << c.steps << " steps x " << fmt("%.3f", row.step_s)
         << " s = " << fmt("%.1f", static_cast<double>(c.steps) * row.step_s) << " s";
    }
    os << "\n";
  }
}

}  // namespace slowpipe::netmodel
