// The bandwidth sweep of `slowpipe timing`: options, the published set-up
// presets, the per-step and whole-run replays, and the printout that states
// every assumption the answer depends on.
#include "netmodel/what_if.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <map>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/internal/replica_symmetry.h"
#include "netmodel/internal/what_if_parts.h"
#include "netmodel/replay.h"
#include "netmodel/schedule.h"

namespace slowpipe::netmodel {

const Registry<TimingPreset>& timing_presets() {
  // Facts and sources: docs/netmodel.md, "The AQ-SGD presets".
  static const Registry<TimingPreset> presets = [] {
    Registry<TimingPreset> v("preset");
    TimingPreset gpt;
    gpt.name = "aqsgd-gpt2xl";
    gpt.description =
        "AQ-SGD's GPT-2 XL fine-tuning: 8 stages (layers 6,6,6,6,7,7,7,3 + LM head), seq 1024, "
        "micro-batch 1, batch 32, GPipe, V100, 10 epochs, 1 warm-up epoch";
    gpt.shape = find_model_shape("timing.preset", "gpt2-xl");
    gpt.shape.name = "gpt2-xl";
    gpt.shape.stage_layers = {6, 6, 6, 6, 7, 7, 7, 3};
    gpt.schedule = "gpipe";
    gpt.device = "V100";
    gpt.epochs = 10;
    gpt.warmup_epochs = 1;
    gpt.codecs_used = "the reference ran fw aq(q4), bw q8";
    v.add(gpt);
    TimingPreset deb;
    deb.name = "aqsgd-deberta";
    deb.description =
        "AQ-SGD's DeBERTa-v2-xxlarge fine-tuning: 8 stages of 6 layers, seq 256, micro-batch 8, "
        "batch 32, GPipe, V100, 10 epochs, 1 warm-up epoch";
    deb.shape = find_model_shape("timing.preset", "deberta-xxl");
    deb.shape.seq = 256;
    deb.shape.microbatch_size = 8;
    deb.schedule = "gpipe";
    deb.device = "V100";
    deb.epochs = 10;
    deb.warmup_epochs = 1;
    deb.codecs_used = "the reference ran fw aq(q3), bw q6";
    v.add(deb);
    add_protocol_nanogpt_presets(v);  // protocol_nanogpt.cpp
    add_swarm_presets(v);             // swarm.cpp
    return v;
  }();
  return presets;
}

const TimingPreset& find_timing_preset(const std::string& key, const std::string& name) {
  if (const TimingPreset* p = timing_presets().find(name)) return *p;
  throw UsageError("bad value for '" + key + "': unknown preset '" + name + "' (known: none, " +
                   timing_presets().known() + ")");
}

namespace {

const TimingPreset* preset_of(const WhatIfConfig& c) {
  return c.preset.empty() ? nullptr : &find_timing_preset("timing.preset", c.preset);
}

std::string model_of(const WhatIfConfig& c) {
  if (!c.model.empty()) return c.model;
  return preset_of(c) ? preset_of(c)->shape.name + " (preset)" : "gpt2-xl";
}

std::string schedule_of(const WhatIfConfig& c) {
  if (!c.schedule.empty()) return c.schedule;
  return preset_of(c) ? preset_of(c)->schedule : "gpipe";
}

std::string device_of(const WhatIfConfig& c) {
  if (!c.device.empty()) return c.device;
  return preset_of(c) ? preset_of(c)->device : "A100";
}

HomeLinks home_links_of(const WhatIfConfig& c) {
  return preset_of(c) ? preset_of(c)->home_links : HomeLinks{};
}

int epochs_of(const WhatIfConfig& c) {
  if (c.epochs > 0) return c.epochs;
  return preset_of(c) ? preset_of(c)->epochs : 10;  // the AQ-SGD reference's default
}

int warmup_of(const WhatIfConfig& c) {
  if (c.warmup_epochs >= 0) return c.warmup_epochs;
  return preset_of(c) ? preset_of(c)->warmup_epochs : 0;
}

bool is_aq(const std::string& spec) {
  return spec.rfind("aq(", 0) == 0;
}

std::vector<double> parse_bandwidth_list(const std::string& v) {
  // Every element must be a bandwidth: "1Gbps,,100Mbps" and "" are errors.
  std::vector<double> out;
  std::string cur;
  for (size_t i = 0; i <= v.size(); ++i) {
    if (i == v.size() || v[i] == ',') {
      if (cur.find_first_not_of(" \t") == std::string::npos) {
        throw UsageError("bad value for 'timing.bandwidth': " +
                         std::string(v.empty() ? "empty list" : "empty element") + " in '" + v +
                         "' (a comma list of bandwidths, e.g. 10Gbps,1Gbps)");
      }
      out.push_back(parse_bandwidth_bps("timing.bandwidth", cur));
      cur.clear();
    } else {
      cur += v[i];
    }
  }
  return out;
}

int parse_count(const std::string& key, const std::string& v, int min) {
  const int64_t n = parse_int(key, v);
  if (n < min || n > 1000000) {
    throw UsageError("bad value for '" + key + "': " + v + " (an integer from " +
                     std::to_string(min) + " to 1000000)");
  }
  return static_cast<int>(n);
}

}  // namespace

namespace {

// The keys of the device and the sizes: stages, batch, micro-batch, subspace, shape.
void describe_size_options(WhatIfConfig& c, slowpipe::OptionSet& o) {
  o.add_custom(
      "timing.device", "choice",
      "device of the synthetic compute times (" + device_presets().known() +
          "); default the preset's, else A100",
      [&c](const std::string& v) {
        find_device("timing.device", v);
        c.device = v;
      },
      [&c] { return device_of(c); });
  o.add("timing.stages", c.stages, "pipeline stages (0: the shape's)", 0, 4096);
  o.add("timing.virtual_stages", c.virtual_stages,
        "model chunks per stage (interleaved schedule; docs/schedules.md)", 1, 64);
  o.add("timing.batch", c.batch, "samples per replica and step (0: the shape's)", 0, 1 << 24);
  o.add("timing.microbatch", c.microbatch_size, "samples per micro-batch (0: the shape's)", 0,
        1 << 20);
  o.add("timing.subspace", c.subspace,
        "k > 0: the model's residual stream lies in a fixed k-dim subspace, so each cut carries k "
        "values per token each way (model.subspace, docs/models.md); the baselines stay "
        "unconstrained; 0 = the shape's width",
        0, 1 << 20);
  o.add("timing.token_id_bytes", c.token_id_bytes,
        "bytes per token a subspace message carries beside its k values (token ids a stage "
        "rebuilds its input from); needs timing.subspace > 0",
        0, 1 << 20);
  describe_shape_options(c, o);  // what_if_shape.cpp
}

// The keys of the step: preset, model, codecs, schedule, replicas, device, sizes.
void describe_step_options(WhatIfConfig& c, slowpipe::OptionSet& o) {
  const std::string shapes = model_shapes().known();
  const std::string scheds = schedule_registry().known();
  const std::string presets = ", " + timing_presets().known();
  o.add_custom(
      "timing.preset", "choice",
      "published set-up (none" + presets +
          "): shape, layers per stage, schedule, device, epochs, warm-up; other keys override it",
      [&c](const std::string& v) {
        if (v != "none") find_timing_preset("timing.preset", v);
        c.preset = v == "none" ? "" : v;
      },
      [&c] { return c.preset.empty() ? std::string("none") : c.preset; });
  o.add_custom(
      "timing.model", "choice", "model shape (" + shapes + "); default the preset's, else gpt2-xl",
      [&c](const std::string& v) {
        find_model_shape("timing.model", v);
        c.model = v;
      },
      [&c] { return model_of(c); });
  o.add_custom(
      "timing.fw", "string",
      "channel spec of forward activations (none = fp32; default the preset's)",
      [&c](const std::string& v) {
        c.specs.forward = v;
        c.fw_given = true;
      },
      [&c] { return c.specs.forward; });
  o.add_custom(
      "timing.bw", "string", "channel spec of backward activation gradients (default the preset's)",
      [&c](const std::string& v) {
        c.specs.backward = v;
        c.bw_given = true;
      },
      [&c] { return c.specs.backward; });
  o.add("timing.grad", c.specs.gradient,
        "channel spec of the data-parallel parameter-gradient all-reduce");
  o.add_custom(
      "timing.schedule", "choice",
      "pipeline schedule (" + scheds + "); default the preset's, else gpipe",
      [&c](const std::string& v) {
        find_schedule(v, "timing.schedule");
        c.schedule = v;
      },
      [&c] { return schedule_of(c); });
  describe_replicas_option(c, o);  // what_if_shape.cpp
  compressors::add_grad_sync_option(
      o, "timing.grad_sync", c.grad_sync,
      "replicas' exchange: ring all-reduce, or the sharded exchange of AQ-SGD's "
      "momentum compression (timing.grad sizes both; docs/grad-sync.md)");
  describe_size_options(c, o);
}

// The keys of the comparison and the whole run: baseline, epochs, warm-ups, bandwidths.
void describe_run_options(WhatIfConfig& c, slowpipe::OptionSet& o) {
  o.add_choice(
      "timing.baseline", {"fp32", "fp16", "both"},
      "uncompressed baseline the speed-up is against: fp32 or fp16 messages, or both (default "
      "the preset's, else fp32)",
      [&c](const std::string& v) {
        c.baseline = v;
        c.baseline_given = true;
      },
      [&c] { return c.baseline; });
  o.add_custom(
      "timing.epochs", "int", "epochs of the whole run (default the preset's, else 10)",
      [&c](const std::string& v) { c.epochs = parse_count("timing.epochs", v, 1); },
      [&c] { return std::to_string(epochs_of(c)); });
  o.add_custom(
      "timing.warmup_epochs", "int",
      "first epochs in which every boundary channel (fw, bw) sends uncompressed (mirrors "
      "compress.warmup_epochs; "
      "default the preset's, else 0)",
      [&c](const std::string& v) { c.warmup_epochs = parse_count("timing.warmup_epochs", v, 0); },
      [&c] { return std::to_string(warmup_of(c)); });
  o.add("timing.aq_warmup_epochs", c.aq_warmup_epochs,
        "warm-up epochs of aq(...) channels (mirrors compress.aq_warmup_epochs; AQ-SGD: 1)", 0,
        1000000);
  o.add("timing.steps_per_epoch", c.steps_per_epoch,
        "steps per epoch of the whole run (scales its time, not its speed-up)", 1, 1 << 30);
  o.add("timing.steps", c.steps,
        "steps of a run to price: > 0 also prints T = steps x step time (0: not printed)", 0,
        int64_t{1} << 40);
  o.add_custom(
      "timing.bandwidth", "list", "bandwidths to sweep (10Gbps,1Gbps,500Mbps,300Mbps,100Mbps)",
      [&c](const std::string& v) {
        c.bandwidths_bps = parse_bandwidth_list(v);
        c.bandwidth_given = true;
      },
      [&c] {
        std::string s;
        for (double b : c.bandwidths_bps) s += (s.empty() ? "" : ",") + format_bandwidth(b);
        return s;
      });
}

}  // namespace

void describe_options(WhatIfConfig& c, slowpipe::OptionSet& o) {
  describe_step_options(c, o);
  describe_run_options(c, o);
}

CodecSpecs baseline_specs(const std::string& baseline) {
  if (baseline != "fp32" && baseline != "fp16") {
    throw UsageError("bad value for 'timing.baseline': '" + baseline + "' (fp32, fp16 or both)");
  }
  const std::string spec = baseline == "fp32" ? "none" : "fp16";
  return CodecSpecs{spec, spec, spec};
}

namespace {

// The shape after the preset and the stage, batch and micro-batch overrides.
ModelShape resolve_shape(const WhatIfConfig& c) {
  const TimingPreset* preset = preset_of(c);
  ModelShape shape = !c.model.empty()    ? find_model_shape("timing.model", c.model)
                     : preset != nullptr ? preset->shape
                                         : find_model_shape("timing.model", "gpt2-xl");
  apply_shape_keys(c, shape);
  if (c.stages > 0 && c.stages != shape.stages) {
    shape.stages = c.stages;
    shape.stage_layers.clear();  // a preset's split no longer fits: even split
  }
  if (c.batch > 0) shape.batch = c.batch;
  if (c.microbatch_size > 0) shape.microbatch_size = c.microbatch_size;
  if (c.subspace > shape.hidden) {
    throw UsageError("timing.subspace = " + std::to_string(c.subspace) +
                     " exceeds the model's width d = " + std::to_string(shape.hidden));
  }
  shape.subspace = c.subspace;
  if (c.token_id_bytes > 0 && c.subspace == 0) {
    throw UsageError("timing.token_id_bytes = " + std::to_string(c.token_id_bytes) +
                     " needs timing.subspace > 0 (token ids travel beside subspace values)");
  }
  try {
    check_model_shape(shape);
  } catch (const UsageError& e) {
    const std::string layers =
        c.layers > 0 ? "timing.layers = " + std::to_string(c.layers) + ", " : "";
    throw UsageError(layers + "timing.stages = " + std::to_string(shape.stages) +
                     ", timing.batch = " + std::to_string(shape.batch) + ", timing.microbatch = " +
                     std::to_string(shape.microbatch_size) + ": " + e.what());
  }
  return shape;
}

// Virtual stages need an interleaved schedule and layers enough for every chunk.
void resolve_virtual_stages(const WhatIfConfig& c, ResolvedWhatIf& r) {
  if (c.virtual_stages <= 1) return;
  if (!r.shape.stage_layers.empty()) r.shape.stage_layers.clear();  // even split into chunks
  if (!find_schedule(r.schedule).virtual_stages) {
    throw UsageError("timing.virtual_stages = " + std::to_string(c.virtual_stages) +
                     " needs an interleaved schedule (timing.schedule = interleaved), not '" +
                     r.schedule + "'");
  }
  ModelShape chunks = r.shape;
  chunks.stages *= c.virtual_stages;
  try {
    check_model_shape(chunks);
  } catch (const UsageError& e) {
    throw UsageError("timing.virtual_stages = " + std::to_string(c.virtual_stages) + ": " +
                     e.what());
  }
}

// As in training (compress.warmup_epochs, compress.aq_warmup_epochs): the
// boundary channels warm up, an aq(...) channel for the larger of the two;
// the gradient all-reduce compresses from the first step.
void resolve_warmup(const WhatIfConfig& c, ResolvedWhatIf& r) {
  const int all = warmup_of(c);
  const std::string* specs[2] = {&c.specs.forward, &c.specs.backward};
  for (int k = 0; k < 2; ++k) {
    const bool aq = is_aq(*specs[k]);
    r.warmup[k] = std::max(all, aq ? c.aq_warmup_epochs : 0);
    if (r.warmup[k] > r.epochs) {
      const std::string key =
          aq && c.aq_warmup_epochs > all ? "timing.aq_warmup_epochs" : "timing.warmup_epochs";
      throw UsageError(key + " = " + std::to_string(r.warmup[k]) +
                       " is more than timing.epochs = " + std::to_string(r.epochs) + " (" +
                       (k == 0 ? "timing.fw = " : "timing.bw = ") + *specs[k] +
                       " would never send compressed); raise timing.epochs");
    }
  }
  r.warmup[2] = 0;
}

}  // namespace

ResolvedWhatIf resolve_what_if(const WhatIfConfig& c) {
  ResolvedWhatIf r;
  r.shape = resolve_shape(c);
  r.schedule = schedule_of(c);
  resolve_virtual_stages(c, r);
  r.device = find_device("timing.device", device_of(c)).name;
  if (c.baseline == "both") {
    r.baselines = {"fp32", "fp16"};
  } else {
    baseline_specs(c.baseline);  // validates
    r.baselines = {c.baseline};
  }
  r.epochs = epochs_of(c);
  resolve_warmup(c, r);
  return r;
}

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
  return s.forward + "|" + s.backward + "|" + s.gradient;
}

MessageSizes message_sizes(const ModelShape& shape, const CodecSpecs& specs,
                           const WireBytesFn& wire_bytes) {
  MessageSizes m;
  const std::vector<int64_t> boundary = {shape.microbatch_size, shape.seq, boundary_width(shape)};
  const std::vector<int64_t> full = {shape.microbatch_size, shape.seq, shape.hidden};
  m.activation = wire_bytes(specs.forward, boundary);
  m.activation_gradient = wire_bytes(specs.backward, boundary);
  m.fp32_activation = wire_bytes("none", full);  // the unconstrained model's
  m.fp16_activation = wire_bytes("fp16", full);
  for (int s = 0; s < shape.stages; ++s) {
    const std::vector<int64_t> params = {static_cast<int64_t>(stage_parameters(shape, s))};
    m.parameter_gradient.push_back(wire_bytes(specs.gradient, params));
    m.fp32_parameter_gradient.push_back(wire_bytes("none", params));
  }
  return m;
}

}  // namespace

NetConfig with_timing_device(const NetConfig& net, const std::string& device) {
  NetConfig n = net;
  if (n.compute == kDefaultComputeModel) n.compute = "analytic:" + device;
  return n;
}

namespace {

// The distinct steps to replay: the compressed steady state, each baseline,
// and each epoch's mix of warm-up and compressed channels per baseline.
struct StepPlan {
  std::map<std::string, StepTrace> traces;  // by key_of(specs)
  std::string compressed;
  std::vector<std::string> base_keys;                      // per baseline
  std::vector<std::map<std::string, int>> epochs_of_step;  // per baseline: step -> epochs
};

// Compact traces (one replica's ops) where the replicas are interchangeable:
// the replay then follows one replica (replay.h), at any replica count.
StepPlan plan_steps(const WhatIfConfig& c, const ResolvedWhatIf& r, const NetConfig& timed,
                    const WireBytesFn& wire_bytes) {
  const DevicePreset& device = find_device("timing.device", r.device);
  const std::string asymmetry = net_asymmetry(timed, r.shape.stages, c.replicas);
  const bool compact = asymmetry.empty();
  if (!compact && c.replicas > kMaxTimingReplicasAsymmetric) {
    throw UsageError("timing.replicas = " + std::to_string(c.replicas) + ": at most " +
                     std::to_string(kMaxTimingReplicasAsymmetric) + " when the replicas differ (" +
                     asymmetry + ")");
  }
  StepPlan plan;
  // The baselines are the unconstrained model (timing.subspace applies to the
  // compressed run and its warm-up epochs only).
  ModelShape unconstrained = r.shape;
  unconstrained.subspace = 0;
  auto trace_of = [&](const CodecSpecs& s, bool baseline = false) {
    const ModelShape& shape = baseline ? unconstrained : r.shape;
    std::string k = key_of(s) + (shape.subspace > 0 ? "|k" + std::to_string(shape.subspace) : "");
    if (plan.traces.count(k) == 0) {
      StepTrace t = make_synthetic_trace(shape, r.schedule, c.replicas, s,
                                         with_token_ids(shape, c.token_id_bytes, wire_bytes),
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
  std::map<std::string, Timeline> timelines;
  for (const auto& [k, trace] : plan.traces) {
    Simulator sim(point);  // a fresh simulator each: the same jitter draws
    timelines.emplace(k, sim.replay(trace));
  }
  const double steps = c.steps_per_epoch;
  WhatIfRow row;
  row.bandwidth_bps = bps;
  const Timeline& t = timelines.at(plan.compressed);
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

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// One table row: the first cell left-aligned (10 wide), the others right (w).
std::string table_row(const std::vector<std::string>& cells, const std::vector<int>& widths) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    const int w = widths[i];
    const std::string& x = cells[i];
    const std::string pad(x.size() < static_cast<size_t>(w) ? w - x.size() : 0, ' ');
    line += i == 0 ? x + pad : "  " + pad + x;
  }
  return line + "\n";
}

// The device line and the compute model that times it.
void print_device(const NetConfig& net, const ResolvedWhatIf& r, std::ostream& os) {
  const DevicePreset& d = find_device("timing.device", r.device);
  os << "device " << d.name << ": peak " << fmt("%.4g", d.peak_flops / 1e12)
     << " TFLOP/s x utilisation " << fmt("%.0f", d.efficiency * 100)
     << "% = " << fmt("%.4g", d.peak_flops * d.efficiency / 1e12) << " TFLOP/s achieved, "
     << fmt("%.4g", d.kernel_launch_s * 1e6)
     << " us per kernel; backward 2 x forward FLOPs, optimizer 28 bytes/parameter, codec passes "
        "stream their bytes\n";
  const std::string cm = with_timing_device(net, r.device).compute;
  os << "compute model net.compute=" << cm
     << (cm == "analytic:" + d.name     ? " (the device line's roofline plus launch floor)"
         : cm.rfind("analytic", 0) == 0 ? " (its own device's roofline replaces the device line)"
         : cm.rfind("fixed", 0) == 0    ? " (fixed op seconds replace the device line)"
         : cm.rfind("scaled", 0) == 0   ? " (the device line's seconds, divided)"
                                        : " (replays the device line's seconds)")
     << "\n";
}

void print_assumptions(const WhatIfConfig& c, const NetConfig& net, const WhatIfResult& res,
                       std::ostream& os) {
  const ResolvedWhatIf& r = res.setup;
  const ModelShape& m = r.shape;
  const MessageSizes& msg = res.messages;
  if (!c.preset.empty()) {
    const TimingPreset& p = find_timing_preset("timing.preset", c.preset);
    os << "set-up " << p.name << ": " << p.description << " (" << p.codecs_used
       << "; docs/netmodel.md)\n";
  }
  os << "model " << m.name << ": " << m.layers << " layers (per stage " << describe_stage_layers(m)
     << "), d " << m.hidden << ", seq " << m.seq << ", vocabulary " << m.vocab
     << (m.mlp_width > 0 ? ", MLP width " + std::to_string(m.mlp_width)
                         : ", MLP ratio " + std::to_string(m.mlp_ratio))
     << ", " << m.score_terms << " attention score matmul(s)"
     << (m.lm_head ? ", LM head on the last stage" : ", no LM head") << "\n";
  const int micro = m.batch / m.microbatch_size;
  os << "pipeline " << m.stages << " stages";
  if (c.virtual_stages > 1) {
    os << " x " << c.virtual_stages << " virtual = " << m.stages * c.virtual_stages
       << " chunks of the layers split evenly";
  }
  os << " x " << c.replicas << " replica(s), schedule " << r.schedule << ", batch " << m.batch
     << " per replica = " << micro << " micro-batches of " << m.microbatch_size << "\n";
  print_device(net, r, os);
  const std::string shape =
      "[" + std::to_string(m.microbatch_size) + "," + std::to_string(m.seq) + "," +
      std::to_string(boundary_width(m)) + "]" + (m.subspace > 0 ? " (subspace coefficients)" : "") +
      (m.subspace > 0 && c.token_id_bytes > 0
           ? " + " + std::to_string(c.token_id_bytes) + " B/token of token ids"
           : "");
  const std::string plain = " (fp32 " + format_bytes(static_cast<double>(msg.fp32_activation)) +
                            ", fp16 " + format_bytes(static_cast<double>(msg.fp16_activation)) +
                            ")";
  os << "message activation " << shape << " fw " << c.specs.forward << ": "
     << format_bytes(static_cast<double>(msg.activation)) << plain << ", " << micro
     << " per boundary and step\n";
  os << "message activation-gradient " << shape << " bw " << c.specs.backward << ": "
     << format_bytes(static_cast<double>(msg.activation_gradient)) << plain << ", " << micro
     << " per boundary and step\n";
  const auto [lo, hi] =
      std::minmax_element(msg.parameter_gradient.begin(), msg.parameter_gradient.end());
  const auto [flo, fhi] =
      std::minmax_element(msg.fp32_parameter_gradient.begin(), msg.fp32_parameter_gradient.end());
  os << "message parameter-gradient all-reduce [stage parameters] grad " << c.specs.gradient << ": "
     << format_bytes(static_cast<double>(*lo)) << " .. " << format_bytes(static_cast<double>(*hi))
     << " per stage (fp32 " << format_bytes(static_cast<double>(*flo)) << " .. "
     << format_bytes(static_cast<double>(*fhi)) << ")"
     << (c.replicas > 1 ? ", one ring all-reduce per stage and step" : ", not sent with 1 replica")
     << "\n";
  os << "network " << describe(net) << ", bandwidth swept\n";
  const HomeLinks home = home_links_of(c);
  if (home.median_bps > 0) {
    os << describe_home_links(home, with_home_links(net, home, m.stages, c.replicas))
       << "; the swept bandwidth is the core between homes\n";
  }
  os << "baseline " << (c.baseline == "both" ? "fp32 and fp16" : c.baseline)
     << ": every channel uncompressed (fp32 = none, fp16 = 2 bytes per element)\n";
  os << "whole run " << r.epochs << " epoch(s) x " << c.steps_per_epoch
     << " steps (timing.steps_per_epoch); warm-up epochs sending the baseline's messages: fw "
     << r.warmup[0] << ", bw " << r.warmup[1] << ", grad " << r.warmup[2] << "\n";
}

}  // namespace

void print_what_if(const WhatIfConfig& c, const NetConfig& net, const WhatIfResult& res,
                   std::ostream& os) {
  print_assumptions(c, net, res, os);
  const auto& bases = res.setup.baselines;
  std::vector<std::string> head = {"bandwidth"};
  for (const auto& b : bases) head.push_back(b + " step s");
  head.push_back("step s");
  for (const auto& b : bases) head.push_back("vs " + b);
  head.push_back("samples/s");
  head.push_back("bubble");
  std::vector<int> widths = {10};
  for (size_t i = 1; i < head.size(); ++i) widths.push_back(std::max<int>(10, head[i].size()));
  os << "\nper step, after warm-up (vs B: speed-up = B step / step)\n" << table_row(head, widths);
  for (const WhatIfRow& row : res.rows) {
    std::vector<std::string> cells = {format_bandwidth(row.bandwidth_bps)};
    for (const auto& b : row.baselines) cells.push_back(fmt("%.4f", b.step_s));
    cells.push_back(fmt("%.4f", row.step_s));
    for (const auto& b : row.baselines) cells.push_back(fmt("%.2fx", b.speedup));
    cells.push_back(fmt("%.3f", row.samples_per_s));
    cells.push_back(fmt("%.1f%%", row.bubble_fraction * 100));
    os << table_row(cells, widths);
  }
  head = {"bandwidth"};
  for (const auto& b : bases) {
    head.push_back(b + " run h");
    head.push_back("run h (" + b + " warm-up)");
    head.push_back("vs " + b);
  }
  widths = {10};
  for (size_t i = 1; i < head.size(); ++i) widths.push_back(std::max<int>(10, head[i].size()));
  os << "\nwhole run, " << res.setup.epochs
     << " epoch(s) with warm-up (vs B: speed-up = B run / run with B warm-up)\n"
     << table_row(head, widths);
  for (const WhatIfRow& row : res.rows) {
    std::vector<std::string> cells = {format_bandwidth(row.bandwidth_bps)};
    for (const auto& b : row.baselines) {
      cells.push_back(fmt("%.3f", b.run_s / 3600));
      cells.push_back(fmt("%.3f", b.compressed_run_s / 3600));
      cells.push_back(fmt("%.2fx", b.run_speedup));
    }
    os << table_row(cells, widths);
  }
  print_run_price(c, res, os);
}

void write_what_if_tsv(const WhatIfResult& res, std::ostream& os, int64_t steps) {
  os << "bandwidth\tbandwidth_bps\tstep_s\tsamples_per_s\tbubble_fraction";
  for (const auto& b : res.setup.baselines) {
    os << "\t" << b << "_step_s\t" << b << "_speedup\t" << b << "_run_s\t" << b
       << "_compressed_run_s\t" << b << "_run_speedup";
  }
  if (steps > 0) os << "\tT_s";
  os << "\n";
  const auto old = os.precision(10);
  for (const auto& row : res.rows) {
    os << format_bandwidth(row.bandwidth_bps) << "\t" << std::setprecision(15) << row.bandwidth_bps
       << std::setprecision(10) << "\t" << row.step_s << "\t" << row.samples_per_s << "\t"
       << row.bubble_fraction;
    for (const auto& b : row.baselines) {
      os << "\t" << b.step_s << "\t" << b.speedup << "\t" << b.run_s << "\t" << b.compressed_run_s
         << "\t" << b.run_speedup;
    }
    if (steps > 0) os << "\t" << static_cast<double>(steps) * row.step_s;
    os << "\n";
  }
  os.precision(old);
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

}  // namespace slowpipe::netmodel
