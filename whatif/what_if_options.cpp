// The `timing.*` keys of `slowpipe timing` (what_if.h, describe_options):
// the step (preset, model, specs, schedule, replicas, grad_sync), the sizes
// (device, stages, batch, micro-batch, subspace and the shape keys) and the
// whole run (baseline, epochs, warm-ups, bandwidths). Each key keeps what it
// was given; the preset's defaults and the checks come after every key is
// read (what_if_resolve.cpp).
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/compute_model.h"
#include "pipeline/schedule.h"
#include "whatif/internal/what_if_parts.h"

namespace slowpipe::whatif {
namespace {

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

// Binds timing.layers, timing.d_model, timing.vocab, timing.seq,
// timing.mlp_width (0: the shape's).
void describe_shape_options(WhatIfConfig& c, slowpipe::OptionSet& o) {
  o.add("timing.layers", c.layers,
        "transformer layers (0: the shape's; split evenly over the stages)", 0, 1 << 20);
  o.add("timing.d_model", c.d_model, "model width d (0: the shape's)", 0, 1 << 24);
  o.add("timing.vocab", c.vocab, "vocabulary size (0: the shape's)", 0, int64_t{1} << 32);
  o.add("timing.seq", c.seq, "sequence length in tokens (0: the shape's)", 0, 1 << 24);
  o.add("timing.mlp_width", c.mlp_width, "MLP hidden width (0: the shape's, MLP ratio x d_model)",
        0, int64_t{1} << 30);
}

// Binds timing.replicas (1..kMaxTimingReplicas; records that it was given, so
// that a preset's replica count does not override it).
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

// The keys of the device and the sizes: stages, batch, micro-batch, subspace, shape.
void describe_size_options(WhatIfConfig& c, slowpipe::OptionSet& o) {
  o.add_custom(
      "timing.device", "choice",
      "device of the synthetic compute times (" + netmodel::device_presets().known() +
          "); default the preset's, else A100",
      [&c](const std::string& v) {
        netmodel::find_device("timing.device", v);
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
  o.add("timing.bottleneck", c.bottleneck,
        "a learned bottleneck at every cut (model.bottleneck's spec: resbm:r=R or "
        "learned:k=K[:anchor=A], docs/models.md): each cut carries R or K values per token each "
        "way, plus 2 B/token of token ids with anchors; the baselines stay unconstrained");
  describe_shape_options(c, o);
}

// The keys of the step: preset, model, codecs, schedule, replicas, device, sizes.
void describe_step_options(WhatIfConfig& c, slowpipe::OptionSet& o) {
  const std::string shapes = models::model_shapes().known();
  const std::string scheds = netmodel::schedule_registry().known();
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
        models::find_model_shape("timing.model", v);
        c.model = v;
      },
      [&c] { return model_of(c); });
  o.add_custom(
      "timing.fw", "string",
      "channel spec of forward activations (none = fp32; default the preset's)",
      [&c](const std::string& v) {
        c.spec_texts.forward = v;
        c.fw_given = true;
      },
      [&c] { return c.spec_texts.forward; });
  o.add_custom(
      "timing.bw", "string", "channel spec of backward activation gradients (default the preset's)",
      [&c](const std::string& v) {
        c.spec_texts.backward = v;
        c.bw_given = true;
      },
      [&c] { return c.spec_texts.backward; });
  o.add("timing.grad", c.spec_texts.gradient,
        "channel spec of the data-parallel parameter-gradient all-reduce");
  o.add_custom(
      "timing.schedule", "choice",
      "pipeline schedule (" + scheds + "); default the preset's, else gpipe",
      [&c](const std::string& v) {
        netmodel::find_schedule(v, "timing.schedule");
        c.schedule = v;
      },
      [&c] { return schedule_of(c); });
  describe_replicas_option(c, o);
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

}  // namespace slowpipe::whatif
