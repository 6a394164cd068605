// The bandwidth sweep of `slowpipe timing` (what_if.h): the distinct steps
// to replay (the compressed steady state, each baseline, each epoch's mix of
// warm-up and compressed channels), each replayed at every bandwidth, and the
// per-step and whole-run rows they give.
#include "whatif/what_if.h"

#include <map>
#include <string>
#include <vector>

#include "common/errors.h"
#include "netmodel/replay.h"
#include "netmodel/replica_symmetry.h"
#include "whatif/internal/what_if_parts.h"

namespace slowpipe::whatif {

namespace {

// The specs of epoch e: each channel its own spec after its warm-up, the
// baseline's before.
CodecSpecs specs_of_epoch(const CodecSpecs& specs, const CodecSpecs& base, const int warmup[3],
                          int epoch) {
  CodecSpecs s;
  s.forward = epoch < warmup[0] ? base.forward : specs.forward;
  s.backward = epoch < warmup[1] ? base.backward : specs.backward;
  s.gradient = epoch < warmup[2] ? base.gradient : specs.gradient;
  return s;
}

std::string key_of(const CodecSpecs& s) {
  return s.forward.text() + "|" + s.backward.text() + "|" + s.gradient.text();
}

}  // namespace

NetConfig with_timing_device(const NetConfig& net, const std::string& device) {
  NetConfig n = net;
  if (n.compute.text == netmodel::kDefaultComputeModel)
    n.compute = netmodel::analytic_compute_spec(device);
  return n;
}

namespace {

// The distinct steps to replay: the compressed steady state, each baseline,
// and each epoch's mix of warm-up and compressed channels per baseline.
struct StepPlan {
  std::map<std::string, netmodel::StepTrace> traces;  // by key_of(specs)
  std::string compressed;
  std::vector<std::string> base_keys;                      // per baseline
  std::vector<std::map<std::string, int>> epochs_of_step;  // per baseline: step -> epochs
};

// Compact traces (one replica's ops) where the replicas are interchangeable:
// the replay then follows one replica (replay.h), at any replica count.
StepPlan plan_steps(const WhatIfConfig& c, const ResolvedWhatIf& r, const NetConfig& timed,
                    const WireBytesFn& wire_bytes) {
  const netmodel::DevicePreset& device = netmodel::find_device("timing.device", r.device);
  const std::string asymmetry = netmodel::net_asymmetry(timed, r.shape.stages, c.replicas);
  const bool compact = asymmetry.empty();
  if (!compact && c.replicas > kMaxTimingReplicasAsymmetric) {
    throw UsageError("timing.replicas = " + std::to_string(c.replicas) + ": at most " +
                     std::to_string(kMaxTimingReplicasAsymmetric) + " when the replicas differ (" +
                     asymmetry + ")");
  }
  StepPlan plan;
  // The baselines are the unconstrained model (timing.subspace applies to the
  // compressed run and its warm-up epochs only).
  models::ModelShape unconstrained = r.shape;
  unconstrained.subspace = 0;
  auto trace_of = [&](const CodecSpecs& s, bool baseline = false) {
    const models::ModelShape& shape = baseline ? unconstrained : r.shape;
    std::string k = key_of(s) + (shape.subspace > 0 ? "|k" + std::to_string(shape.subspace) : "");
    if (plan.traces.count(k) == 0) {
      netmodel::StepTrace t = make_synthetic_trace(
          shape, r.schedule, c.replicas, s, with_token_ids(shape, c.token_id_bytes, wire_bytes),
          device, c.virtual_stages, compact);
      t.sharded_exchange = c.grad_sync == compressors::GradSync::kMomentum;
      plan.traces.emplace(k, std::move(t));
    }
    return k;
  };
  plan.compressed = trace_of(c.specs);
  plan.epochs_of_step.resize(r.baselines.size());
  for (size_t b = 0; b < r.baselines.size(); ++b) {
    const CodecSpecs base = baseline_specs(r.baselines[b]);
    plan.base_keys.push_back(trace_of(base, /*baseline=*/true));
    for (int e = 0; e < r.epochs; ++e) {
      ++plan.epochs_of_step[b][trace_of(specs_of_epoch(c.specs, base, r.warmup, e))];
    }
  }
  return plan;
}

// The row of one bandwidth: every planned step replayed at `bps`.
WhatIfRow row_at(double bps, const StepPlan& plan, const WhatIfConfig& c, const ResolvedWhatIf& r,
                 const NetConfig& timed) {
  NetConfig point = timed;
  point.bandwidth_bps = bps;
  std::map<std::string, netmodel::Timeline> timelines;
  for (const auto& [k, trace] : plan.traces) {
    netmodel::Simulator sim(point);  // a fresh simulator each: the same jitter draws
    timelines.emplace(k, sim.replay(trace));
  }
  const double steps = c.steps_per_epoch;
  WhatIfRow row;
  row.bandwidth_bps = bps;
  const netmodel::Timeline& t = timelines.at(plan.compressed);
  row.step_s = t.step_s;
  row.samples_per_s = t.step_s > 0 ? r.shape.batch * c.replicas / t.step_s : 0;
  row.bubble_fraction = t.bubble_fraction;
  for (size_t b = 0; b < r.baselines.size(); ++b) {
    BaselineRow br;
    br.baseline = r.baselines[b];
    br.step_s = timelines.at(plan.base_keys[b]).step_s;
    br.speedup = row.step_s > 0 ? br.step_s / row.step_s : 0;
    br.run_s = r.epochs * steps * br.step_s;
    for (const auto& [k, n] : plan.epochs_of_step[b]) {
      br.compressed_run_s += n * steps * timelines.at(k).step_s;
    }
    br.run_speedup = br.compressed_run_s > 0 ? br.run_s / br.compressed_run_s : 0;
    row.baselines.push_back(br);
  }
  return row;
}

}  // namespace

WhatIfResult run_what_if(const WhatIfConfig& c, const NetConfig& net,
                         const WireBytesFn& wire_bytes) {
  WhatIfResult result;
  result.setup = resolve_what_if(c);
  const ResolvedWhatIf& r = result.setup;
  result.messages =
      message_sizes(r.shape, c.specs, with_token_ids(r.shape, c.token_id_bytes, wire_bytes));
  const NetConfig timed = with_home_links(with_timing_device(net, r.device), home_links_of(c),
                                          r.shape.stages, c.replicas);
  const StepPlan plan = plan_steps(c, r, timed, wire_bytes);
  for (double bps : c.bandwidths_bps) result.rows.push_back(row_at(bps, plan, c, r, timed));
  return result;
}

WhatIfResult run_what_if(const WhatIfConfig& c, const NetConfig& net) {
  return run_what_if(c, net, codec_wire_bytes(c.specs.forward));
}

void run_timing(const WhatIfConfig& c, const NetConfig& net, std::ostream& os, bool tsv) {
  run_timing(c, net, codec_wire_bytes(c.specs.forward), os, tsv);
}

void run_timing(const WhatIfConfig& c, const NetConfig& net, const WireBytesFn& wire_bytes,
                std::ostream& os, bool tsv) {
  const WhatIfResult result = run_what_if(c, net, wire_bytes);
  if (tsv) {
    write_what_if_tsv(result, os, c.steps);
  } else {
    print_what_if(c, net, result, os);
  }
}

}  // namespace slowpipe::whatif
