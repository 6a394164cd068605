// Parts of `slowpipe timing` kept apart from what_if.cpp (what_if_shape.cpp):
// the keys that build a model shape from its dimensions (timing.layers,
// timing.d_model, ...), the token ids beside subspace values, the printed
// price of a run; and the Protocol NanoGPT presets (protocol_nanogpt.cpp; docs/netmodel.md,
// "The Protocol NanoGPT presets"). Leaves out: the replays and the printout
// (what_if.cpp).
#pragma once

#include <ostream>

#include "common/options.h"
#include "common/registry.h"
#include "netmodel/what_if.h"

namespace slowpipe::netmodel {

// Binds timing.layers, timing.d_model, timing.vocab, timing.seq,
// timing.mlp_width (0: the shape's).
void describe_shape_options(WhatIfConfig& config, slowpipe::OptionSet& options);
// Binds timing.replicas (1..kMaxTimingReplicas; records that it was given, so
// that a preset's replica count does not override it).
void describe_replicas_option(WhatIfConfig& config, slowpipe::OptionSet& options);
// `shape` with those keys applied (a new layer count drops a preset's uneven
// split); throws UsageError naming the key when the width is below a
// subspace or the result is not a shape.
void apply_shape_keys(const WhatIfConfig& config, ModelShape& shape);

// `wire_bytes` with `id_bytes` per token added to every boundary message
// [b, T, k] of a subspace shape (timing.token_id_bytes); as is otherwise.
// Holds a reference to `wire_bytes`.
WireBytesFn with_token_ids(const ModelShape& shape, int64_t id_bytes,
                           const WireBytesFn& wire_bytes);
// The steady-state step against the preset's record (TimingPreset::
// record_step_s) and T = timing.steps x step, per bandwidth; nothing when
// neither applies.
void print_run_price(const WhatIfConfig& config, const WhatIfResult& result, std::ostream& os);

// Adds `protocol-nanogpt` (the vanilla record) and `protocol-nanogpt-ssn`
// (the ReparamSSN record) to the timing presets.
void add_protocol_nanogpt_presets(Registry<TimingPreset>& presets);

}  // namespace slowpipe::netmodel
