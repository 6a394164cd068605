// The resolution of `slowpipe timing`'s keys (what_if.h): each key's value,
// else the preset's, else the built-in default; the preset's defaults for
// keys not given; the specs parsed once; the model shape after the shape,
// stage and batch keys; the baselines and every channel's warm-up, checked.
// Throws UsageError naming the key.
#include <algorithm>
#include <string>

#include "common/errors.h"
#include "models/facts/bottleneck_spec.h"
#include "netmodel/compute_model.h"
#include "pipeline/schedule.h"
#include "whatif/internal/what_if_parts.h"

namespace slowpipe::whatif {

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

// timing.bottleneck: the values per token at every cut and the token ids a
// learned projection's anchors need (docs/models.md, "Learned bottlenecks").
void apply_bottleneck(WhatIfConfig& c) {
  if (c.bottleneck.empty()) return;
  if (c.subspace > 0 || c.token_id_bytes > 0) {
    throw UsageError("timing.bottleneck = " + c.bottleneck +
                     " sets the values per token at a cut itself; leave timing.subspace and "
                     "timing.token_id_bytes unset");
  }
  models::BottleneckSpec bn;
  try {
    bn = models::parse_bottleneck(c.bottleneck, 1 << 20, 1 << 20);  // widths checked by the shape
  } catch (const UsageError& e) {
    throw UsageError(std::string("timing.bottleneck: ") + e.what());
  }
  c.subspace = bn.width;
  c.token_id_bytes = bn.anchor > 0 ? 2 : 0;
}

void apply_preset_defaults(WhatIfConfig& c, NetConfig& net) {
  apply_bottleneck(c);
  if (c.preset.empty()) return;
  const TimingPreset& p = find_timing_preset("timing.preset", c.preset);
  if (!p.fw.empty() && !c.fw_given) c.spec_texts.forward = p.fw;
  if (!p.bw.empty() && !c.bw_given) c.spec_texts.backward = p.bw;
  if (!p.baseline.empty() && !c.baseline_given) c.baseline = p.baseline;
  if (p.bandwidth_bps > 0 && !c.bandwidth_given) c.bandwidths_bps = {p.bandwidth_bps};
  if (p.replicas > 0 && !c.replicas_given) c.replicas = p.replicas;
  if (p.latency_s >= 0 && net.latency_s < 0) net.latency_s = p.latency_s;
  if (!p.link_model.empty() && net.link_model.empty()) net.link_model = p.link_model;
  if (p.subspace > 0 && c.subspace == 0) c.subspace = p.subspace;
  if (p.token_id_bytes > 0 && c.token_id_bytes == 0) c.token_id_bytes = p.token_id_bytes;
}

CodecSpecs parse_specs(const SpecTexts& texts) {
  using compressors::ChannelSpec;
  CodecSpecs specs;
  specs.forward = ChannelSpec::parse(texts.forward, /*backward=*/false);
  specs.backward = ChannelSpec::parse(texts.backward, /*backward=*/true);
  specs.gradient = ChannelSpec::parse(texts.gradient, /*backward=*/false);
  return specs;
}

CodecSpecs baseline_specs(const std::string& baseline) {
  if (baseline != "fp32" && baseline != "fp16") {
    throw UsageError("bad value for 'timing.baseline': '" + baseline + "' (fp32, fp16 or both)");
  }
  const compressors::ChannelSpec spec =
      compressors::ChannelSpec::parse(baseline == "fp32" ? "none" : "fp16", /*backward=*/false);
  return CodecSpecs{spec, spec, spec};
}

namespace {

// `shape` with the shape keys applied (a new layer count drops a preset's
// uneven split).
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

// The shape after the preset and the stage, batch and micro-batch overrides.
models::ModelShape resolve_shape(const WhatIfConfig& c) {
  const TimingPreset* preset = preset_of(c);
  models::ModelShape shape = !c.model.empty() ? models::find_model_shape("timing.model", c.model)
                             : preset != nullptr
                                 ? preset->shape
                                 : models::find_model_shape("timing.model", "gpt2-xl");
  apply_shape_keys(c, shape);
  if (c.stages > 0 && c.stages != shape.stages) {
    shape.stages = c.stages;
    shape.stage_layers.clear();  // a preset's split no longer fits: even split
  }
  if (c.batch > 0) shape.batch = c.batch;
  if (c.microbatch_size > 0) shape.microbatch_size = c.microbatch_size;
  if (c.subspace > shape.hidden) {
    throw UsageError((c.bottleneck.empty() ? "timing.subspace = " + std::to_string(c.subspace)
                                           : "timing.bottleneck = " + c.bottleneck) +
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
  if (!netmodel::find_schedule(r.schedule).virtual_stages) {
    throw UsageError("timing.virtual_stages = " + std::to_string(c.virtual_stages) +
                     " needs an interleaved schedule (timing.schedule = interleaved), not '" +
                     r.schedule + "'");
  }
  models::ModelShape chunks = r.shape;
  chunks.stages *= c.virtual_stages;
  try {
    check_model_shape(chunks);
  } catch (const UsageError& e) {
    throw UsageError("timing.virtual_stages = " + std::to_string(c.virtual_stages) + ": " +
                     e.what());
  }
}

// As in training (compress.warmup_epochs, compress.aq_warmup_epochs): the
// boundary channels warm up, a channel whose scheme keys its state by sample
// (AQ-SGD; the scheme registry's keyed_by_sample) for the larger of the two;
// the gradient all-reduce compresses from the first step.
void resolve_warmup(const WhatIfConfig& c, ResolvedWhatIf& r) {
  const int all = warmup_of(c);
  const compressors::ChannelSpec* specs[2] = {&c.specs.forward, &c.specs.backward};
  for (int k = 0; k < 2; ++k) {
    const bool keyed = specs[k]->keyed_by_sample();
    r.warmup[k] = std::max(all, keyed ? c.aq_warmup_epochs : 0);
    if (r.warmup[k] > r.epochs) {
      const std::string key =
          keyed && c.aq_warmup_epochs > all ? "timing.aq_warmup_epochs" : "timing.warmup_epochs";
      throw UsageError(key + " = " + std::to_string(r.warmup[k]) +
                       " is more than timing.epochs = " + std::to_string(r.epochs) + " (" +
                       (k == 0 ? "timing.fw = " : "timing.bw = ") + specs[k]->text() +
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
  r.device = netmodel::find_device("timing.device", device_of(c)).name;
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

}  // namespace slowpipe::whatif
