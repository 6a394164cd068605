// The AQ-SGD presets of `slowpipe timing` and the registry that holds every
// timing preset (timing_preset.h): GPT-2 XL and DeBERTa-v2-xxlarge as the
// AQ-SGD paper fine-tuned them (facts and sources: docs/netmodel.md, "The
// AQ-SGD presets"). The Protocol NanoGPT and swarm presets add themselves
// from their own files.
#include "whatif/timing_preset.h"

#include "common/errors.h"
#include "whatif/internal/what_if_parts.h"

namespace slowpipe::whatif {

const Registry<TimingPreset>& timing_presets() {
  // Facts and sources: docs/netmodel.md, "The AQ-SGD presets".
  static const Registry<TimingPreset> presets = [] {
    Registry<TimingPreset> v("preset");
    TimingPreset gpt;
    gpt.name = "aqsgd-gpt2xl";
    gpt.description =
        "AQ-SGD's GPT-2 XL fine-tuning: 8 stages (layers 6,6,6,6,7,7,7,3 + LM head), seq 1024, "
        "micro-batch 1, batch 32, GPipe, V100, 10 epochs, 1 warm-up epoch";
    gpt.shape = models::find_model_shape("timing.preset", "gpt2-xl");
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
    deb.shape = models::find_model_shape("timing.preset", "deberta-xxl");
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

}  // namespace slowpipe::whatif
