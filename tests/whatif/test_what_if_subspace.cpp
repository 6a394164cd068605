// What-if timing of a subspace-constrained model (timing.subspace = k): each
// cut carries k values per token each way, the baselines stay the
// unconstrained model's, and the step is what the same replay gives for a
// shape of width k at the boundaries. Closed-form wire sizes as in
// test_what_if_run.cpp: 4 bytes per element for "none", bits/8 for "qB".
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "netmodel/replay.h"
#include "whatif/what_if.h"

namespace nm = slowpipe::netmodel;
namespace wi = slowpipe::whatif;

namespace {

uint64_t subspace_wire_bytes(const slowpipe::compressors::ChannelSpec& spec_,
                             const std::vector<int64_t>& shape) {
  const std::string& spec = spec_.text();
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  if (spec == "none") return 4 * n;
  if (spec == "fp16") return 2 * n;
  if (spec.size() > 1 && spec[0] == 'q') return n * std::stoul(spec.substr(1)) / 8;
  throw slowpipe::UsageError("unknown spec " + spec);
}

}  // namespace

TEST_CASE("What-if subspace: k values per token cross each cut; baselines stay full width") {
  wi::WhatIfConfig w;  // GPT-2 XL shape: d 1600, seq 1024, micro-batch 1
  w.subspace = 160;
  w.bandwidths_bps = {100e6};
  const auto r = wi::run_what_if(w, nm::NetConfig{}, subspace_wire_bytes);
  CHECK(r.messages.activation == 4ull * 1024 * 160);
  CHECK(r.messages.activation_gradient == 4ull * 1024 * 160);
  CHECK(r.messages.fp32_activation == 4ull * 1024 * 1600);
  // The compressed step replays a trace whose sends carry k-wide messages.
  const auto device = nm::find_device("test", "A100");
  const auto sub = wi::make_synthetic_trace(r.setup.shape, "gpipe", 1, wi::CodecSpecs{},
                                            subspace_wire_bytes, device);
  auto full_shape = r.setup.shape;
  full_shape.subspace = 0;
  const auto full = wi::make_synthetic_trace(full_shape, "gpipe", 1, wi::CodecSpecs{},
                                             subspace_wire_bytes, device);
  REQUIRE(sub.ops.size() == full.ops.size());
  int sends = 0;
  for (size_t i = 0; i < sub.ops.size(); ++i) {
    if (full.ops[i].bytes == 0) continue;
    CHECK(sub.ops[i].bytes * 10 == full.ops[i].bytes);
    ++sends;
  }
  CHECK(sends == 2 * 7 * 32);
  // At 100 Mbit/s the network dominates: 10x fewer bytes is a large speed-up
  // over the fp32 baseline, which is the unconstrained step.
  REQUIRE(r.rows.size() == 1);
  wi::WhatIfConfig plain = w;
  plain.subspace = 0;
  const auto base = wi::run_what_if(plain, nm::NetConfig{}, subspace_wire_bytes);
  CHECK(r.rows[0].baselines[0].step_s == base.rows[0].baselines[0].step_s);
  CHECK(r.rows[0].baselines[0].speedup > 3.0);
  CHECK(base.rows[0].baselines[0].speedup == Approx(1.0));
}

TEST_CASE("What-if subspace: k wider than the model is a usage error") {
  wi::WhatIfConfig w;
  w.subspace = 1601;
  CHECK_THROWS_WITH(wi::resolve_what_if(w), Catch::Contains("timing.subspace = 1601"));
}

TEST_CASE("What-if bottleneck: timing.bottleneck sizes the messages from the spec") {
  // resbm:r=160 is 160 values per token at each cut, as timing.subspace = 160.
  wi::WhatIfConfig w;
  w.bottleneck = "resbm:r=160";
  w.bandwidths_bps = {100e6};
  nm::NetConfig net;
  wi::apply_preset_defaults(w, net);
  const auto r = wi::run_what_if(w, net, subspace_wire_bytes);
  CHECK(r.messages.activation == 4ull * 1024 * 160);
  CHECK(r.messages.fp32_activation == 4ull * 1024 * 1600);
  // Anchors: 2 bytes of token id per token on top, each way.
  wi::WhatIfConfig a;
  a.bottleneck = "learned:k=160:anchor=16";
  a.bandwidths_bps = {100e6};
  wi::apply_preset_defaults(a, net);
  const auto ra = wi::run_what_if(a, net, subspace_wire_bytes);
  CHECK(ra.messages.activation == 4ull * 1024 * 160 + 2ull * 1024);
  CHECK(ra.messages.activation_gradient == ra.messages.activation);
  // Refusals name the key.
  wi::WhatIfConfig both;
  both.bottleneck = "resbm:r=8";
  both.subspace = 8;
  CHECK_THROWS_WITH(wi::apply_preset_defaults(both, net), Catch::Contains("timing.bottleneck"));
  wi::WhatIfConfig bad;
  bad.bottleneck = "resbm:q=8";
  CHECK_THROWS_WITH(wi::apply_preset_defaults(bad, net),
                    Catch::Contains("timing.bottleneck: model.bottleneck=resbm:q=8"));
  wi::WhatIfConfig wide;
  wide.bottleneck = "resbm:r=2000";
  wi::apply_preset_defaults(wide, net);
  CHECK_THROWS_WITH(wi::resolve_what_if(wide), Catch::Contains("timing.bottleneck = resbm:r=2000"));
}
