// What-if timing without training (`slowpipe timing`): a model shape, codec
// specs, a schedule, replicas and a network -> step time, throughput, and the
// speed-up over an uncompressed baseline (fp32 or fp16 messages), per step and
// over a whole run whose first epochs send uncompressed (warm-up), for a sweep
// of bandwidths. The latency, efficiency, jitter and compute model come from
// the NetConfig; each sweep point replaces its bandwidth. Runs in
// milliseconds: a handful of replays per bandwidth.
//
// Whole run (docs/netmodel.md, "Whole-run time"): E epochs of S steps. A
// boundary channel c (forward, backward) sends the baseline's messages in its
// W_c warm-up epochs and its own spec after them; the gradient all-reduce has
// no warm-up, as in training. With T_B the baseline step and
// T_e the step of epoch e, the baseline run takes E·S·T_B, the compressed run
// S·Σ_e T_e, and the whole-run speed-up is E·T_B / Σ_e T_e; when every
// compressed channel warms up W epochs: E·T_B / (W·T_B + (E−W)·T_c).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "common/options.h"
#include "compressors/codecs/grad_sync.h"
#include "netmodel/net_config.h"
#include "whatif/synthetic_trace.h"
#include "whatif/timing_preset.h"

namespace slowpipe::whatif {

using netmodel::NetConfig;

// Most replicas of a what-if (timing.replicas), and most where the replicas
// are not interchangeable (net.jitter, net.links or a swarm preset's home
// links not repeated on every replica: replica_symmetry.h), which the replay
// follows one by one.
constexpr int kMaxTimingReplicas = 100000;
constexpr int kMaxTimingReplicasAsymmetric = 4096;

// The channel specs as the keys give them (timing.fw, timing.bw,
// timing.grad), before a preset's defaults and the parse: "none" is fp32.
struct SpecTexts {
  std::string forward = "none", backward = "none", gradient = "none";
};

// Empty strings and negative or zero counts mean "the preset's, else the
// built-in default" (resolve_what_if).
struct WhatIfConfig {
  std::string preset;    // "" = none
  std::string model;     // "" = preset's, else gpt2-xl
  SpecTexts spec_texts;  // timing.fw, timing.bw, timing.grad as written, or the preset's
  CodecSpecs specs;      // the same parsed once (parse_specs), what the run sends
  std::string schedule;  // "" = preset's, else gpipe
  int replicas = 1;
  std::string device;      // "" = preset's, else A100
  int stages = 0;          // 0: the shape's
  int virtual_stages = 1;  // model chunks per stage (interleaved schedules)
  compressors::GradSync grad_sync = compressors::GradSync::kAllReduce;  // allreduce | momentum
  int batch = 0;               // 0: the shape's (samples per replica and step)
  int microbatch_size = 0;     // 0: the shape's
  int64_t subspace = 0;        // values per token at a cut; 0: hidden
  int64_t token_id_bytes = 0;  // bytes per token beside the subspace values
  std::string bottleneck;      // timing.bottleneck: sets subspace (and token_id_bytes) from a spec
  // Shape overrides (0: the shape's): layers, width, vocabulary, sequence, MLP width.
  int layers = 0;
  int64_t d_model = 0, vocab = 0, seq = 0, mlp_width = 0;
  int64_t steps = 0;  // > 0: also print T = steps x step time (timing.steps, --steps)
  // Set by the keys, so that a preset's defaults never override them.
  bool fw_given = false, bw_given = false, bandwidth_given = false, baseline_given = false,
       replicas_given = false;
  std::string baseline = "fp32";  // fp32 | fp16 | both
  int epochs = 0;                 // 0: preset's, else 10
  int warmup_epochs = -1;         // every channel; < 0: preset's, else 0
  int aq_warmup_epochs = 1;       // channels keyed by sample, aq(...) (AQ-SGD's default)
  int steps_per_epoch = 100;
  std::vector<double> bandwidths_bps = {10e9, 1e9, 500e6, 300e6, 100e6};
};

// Binds `timing.preset`, `timing.model`, `timing.fw`, `timing.bw`,
// `timing.grad`, `timing.schedule`, `timing.replicas`, `timing.device`,
// `timing.stages`, `timing.virtual_stages`, `timing.grad_sync`, `timing.batch`,
// `timing.microbatch`, `timing.subspace`, `timing.baseline`, `timing.epochs`,
// `timing.warmup_epochs`, `timing.aq_warmup_epochs`, `timing.steps_per_epoch`, `timing.bandwidth`
// (a comma list), `timing.token_id_bytes`, `timing.steps`, and the shape keys
// `timing.layers`, `timing.d_model`, `timing.vocab`, `timing.seq`,
// `timing.mlp_width` (what_if_options.cpp). The spec keys set spec_texts.
void describe_options(WhatIfConfig& config, slowpipe::OptionSet& options);

// timing.bottleneck's values per token and token-id bytes (UsageError with
// timing.subspace or timing.token_id_bytes), then the preset's defaults for
// keys the user did not give (TimingPreset: fw, bw, the bandwidth, replicas,
// net.latency, net.link_model, subspace, token-id bytes): what `slowpipe
// timing` applies after reading its keys, before parsing the specs.
void apply_preset_defaults(WhatIfConfig& config, NetConfig& net);
// The spec texts parsed once (compressors::ChannelSpec::parse: the forward and
// the gradient as forwards, the backward as a backward); UsageError naming the
// position. Whether they suit their roles is the caller's check (cmd_timing
// checks them as training does).
CodecSpecs parse_specs(const SpecTexts& texts);

// The configuration with the preset and defaults applied and checked.
struct ResolvedWhatIf {
  models::ModelShape shape;  // after the preset and the overrides
  std::string schedule, device;
  std::vector<std::string> baselines;  // "fp32", "fp16" (in that order)
  int epochs = 1;
  int warmup[3] = {0, 0, 0};  // warm-up epochs of forward, backward, gradient (always 0)
};
// Throws UsageError naming the key: timing.epochs < a channel's warm-up, an
// unknown preset/model/device/baseline, stages that do not fit the layers.
// A channel whose scheme keys its state by sample (AQ-SGD; the scheme
// registry's keyed_by_sample) warms up for timing.aq_warmup_epochs at least.
ResolvedWhatIf resolve_what_if(const WhatIfConfig& config);

// The specs every channel sends in the uncompressed baseline: "none" (fp32) or
// "fp16".
CodecSpecs baseline_specs(const std::string& baseline);

struct BaselineRow {
  std::string baseline;         // fp32 | fp16
  double step_s = 0;            // the baseline's step
  double speedup = 0;           // step_s / compressed step (after warm-up)
  double run_s = 0;             // E·S·step_s
  double compressed_run_s = 0;  // S·Σ_e T_e, warm-up messages in this baseline's precision
  double run_speedup = 0;       // run_s / compressed_run_s
};

struct WhatIfRow {
  double bandwidth_bps = 0;
  double step_s = 0;  // compressed, after every warm-up
  double samples_per_s = 0;
  double bubble_fraction = 0;
  std::vector<BaselineRow> baselines;  // as ResolvedWhatIf::baselines
};

// The bytes of one message of each kind (message_sizes.cpp).
struct MessageSizes {
  uint64_t activation = 0, activation_gradient = 0;  // [microbatch, seq, hidden]
  uint64_t fp32_activation = 0, fp16_activation = 0;
  std::vector<uint64_t> parameter_gradient;  // per stage, [P_s]
  std::vector<uint64_t> fp32_parameter_gradient;
};

struct WhatIfResult {
  ResolvedWhatIf setup;
  MessageSizes messages;
  std::vector<WhatIfRow> rows;
};

// The sweep, messages sized by compressors::wire_bytes (codec_wire_bytes).
WhatIfResult run_what_if(const WhatIfConfig& config, const NetConfig& net);
// The same with the messages sized by `wire_bytes` (tests).
WhatIfResult run_what_if(const WhatIfConfig& config, const NetConfig& net,
                         const WireBytesFn& wire_bytes);
// `net` with net.compute at its default (kDefaultComputeModel) replaced by the
// analytic model of timing.device: a what-if times the device it names.
NetConfig with_timing_device(const NetConfig& net, const std::string& device);
void print_what_if(const WhatIfConfig& config, const NetConfig& net, const WhatIfResult& result,
                   std::ostream& os);
// The rows as TSV (`slowpipe timing --tsv`), one line per bandwidth:
// bandwidth (as "100Mbps"), bandwidth_bps, step_s, samples_per_s,
// bubble_fraction, then per baseline B (fp32, fp16): B_step_s, B_speedup,
// B_run_s, B_compressed_run_s, B_run_speedup (seconds; speed-ups as ratios).
// With steps > 0 a last column T_s = steps x step_s (timing.steps).
void write_what_if_tsv(const WhatIfResult& result, std::ostream& os, int64_t steps = 0);
// Both: what `slowpipe timing` does (`tsv`: write_what_if_tsv instead of the
// printed assumptions and tables); with `wire_bytes` (tests) instead of
// compressors::wire_bytes.
void run_timing(const WhatIfConfig& config, const NetConfig& net, std::ostream& os,
                bool tsv = false);
void run_timing(const WhatIfConfig& config, const NetConfig& net, const WireBytesFn& wire_bytes,
                std::ostream& os, bool tsv = false);

}  // namespace slowpipe::whatif
