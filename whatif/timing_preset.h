// The published set-ups of `slowpipe timing` (`timing.preset`): a paper's
// model shape, schedule, device, epochs and warm-up, and the defaults of
// other keys its experiments fixed (specs, bandwidth, latency, replicas).
// The AQ-SGD presets are in timing_preset.cpp, the Protocol NanoGPT ones in
// protocol_nanogpt.cpp, the swarm one in swarm.cpp (docs/netmodel.md, "The
// AQ-SGD presets" and after). Every key set explicitly overrides a preset.
#pragma once

#include <cstdint>
#include <string>

#include "common/registry.h"
#include "models/facts/model_shape.h"
#include "whatif/swarm.h"

namespace slowpipe::whatif {

// A published set-up (`timing.preset`): shape, schedule, device, epochs and
// warm-up of a paper's experiments; every key set explicitly overrides it.
struct TimingPreset {
  std::string name;
  std::string description;  // one line
  models::ModelShape shape;
  std::string schedule;
  std::string device;
  int epochs = 1;
  int warmup_epochs = 0;    // every boundary channel
  std::string codecs_used;  // what the source ran, for the banner
  // Defaults of keys outside the shape (apply_preset_defaults); empty / 0 /
  // negative: none.
  std::string fw, bw;          // timing.fw, timing.bw
  std::string baseline;        // timing.baseline
  double bandwidth_bps = 0;    // timing.bandwidth: this one bandwidth
  double latency_s = -1;       // net.latency
  std::string link_model;      // net.link_model
  int64_t subspace = 0;        // timing.subspace
  int64_t token_id_bytes = 0;  // timing.token_id_bytes
  double record_step_s = 0;    // the source's published step time, printed beside ours
  int replicas = 0;            // timing.replicas; 0: 1
  HomeLinks home_links;        // per-host access links drawn from it (swarm.h); none by default
};
const Registry<TimingPreset>& timing_presets();
// Throws UsageError naming `key` and listing the presets (and "none").
const TimingPreset& find_timing_preset(const std::string& key, const std::string& name);

}  // namespace slowpipe::whatif
