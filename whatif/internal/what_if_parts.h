// What the files of `slowpipe timing` share and no other library needs: the
// preset-or-default lookups (what_if_resolve.cpp) that the keys' shown values,
// the resolution and the printout all read; the messages' sizes
// (message_sizes.cpp); the printed price of a run (what_if_print.cpp); the
// Protocol NanoGPT presets' registration (protocol_nanogpt.cpp; docs/netmodel.md,
// "The Protocol NanoGPT presets").
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "common/registry.h"
#include "whatif/what_if.h"

namespace slowpipe::whatif {

// The chosen preset, or nullptr for none (timing.preset = none).
const TimingPreset* preset_of(const WhatIfConfig& config);
// Each key's value, else the preset's, else the built-in default (gpt2-xl,
// gpipe, A100, 10 epochs, no warm-up, no home links); the model reads
// "NAME (preset)" when it comes from the preset.
std::string model_of(const WhatIfConfig& config);
std::string schedule_of(const WhatIfConfig& config);
std::string device_of(const WhatIfConfig& config);
HomeLinks home_links_of(const WhatIfConfig& config);
int epochs_of(const WhatIfConfig& config);
int warmup_of(const WhatIfConfig& config);

// `wire_bytes` with `id_bytes` per token added to every boundary message
// [b, T, k] of a subspace shape (timing.token_id_bytes); as is otherwise.
// Holds a reference to `wire_bytes`.
WireBytesFn with_token_ids(const models::ModelShape& shape, int64_t id_bytes,
                           const WireBytesFn& wire_bytes);
// The bytes of each message of `shape` under `specs`, and the fp32 and fp16
// sizes of the unconstrained model's.
MessageSizes message_sizes(const models::ModelShape& shape, const CodecSpecs& specs,
                           const WireBytesFn& wire_bytes);

// The steady-state step against the preset's record (TimingPreset::
// record_step_s) and T = timing.steps x step, per bandwidth; nothing when
// neither applies.
void print_run_price(const WhatIfConfig& config, const WhatIfResult& result, std::ostream& os);

// Adds `protocol-nanogpt` (the vanilla record) and `protocol-nanogpt-ssn`
// (the ReparamSSN record) to the timing presets.
void add_protocol_nanogpt_presets(Registry<TimingPreset>& presets);

}  // namespace slowpipe::whatif
