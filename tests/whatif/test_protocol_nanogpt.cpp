// The Protocol NanoGPT presets (whatif/protocol_nanogpt.cpp) under the
// shared-inbound link model (net.link_model = shared-inbound, the benchmark's
// meter; netmodel/replay_inbound.h) reproduce the benchmark's records within
// 2%, and the default full-duplex model on the same set-up does not (the
// control). Keys given explicitly win over the presets' defaults.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "common/errors.h"
#include "common/options.h"
#include "netmodel/net_config.h"
#include "whatif/what_if.h"

namespace nm = slowpipe::netmodel;
namespace wi = slowpipe::whatif;

namespace {

uint64_t bf16_bytes(const slowpipe::compressors::ChannelSpec& spec_,
                    const std::vector<int64_t>& shape) {
  const std::string& spec = spec_.text();
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  if (spec == "none") return 4 * n;
  if (spec == "bf16" || spec == "fp16") return 2 * n;
  throw slowpipe::UsageError("unknown spec " + spec);
}

}  // namespace

TEST_CASE("Link model: the protocol-nanogpt presets reproduce the records within 2%") {
  // The records: vanilla 100.475 s/step, ReparamSSN 19.889 s/step
  // (PluralisResearch/ProtocolNanoGPT, records/; docs/netmodel.md).
  for (const auto& [preset, record_s, bytes_per_token] :
       {std::tuple<std::string, double, uint64_t>{"protocol-nanogpt", 100.475, 2048},
        {"protocol-nanogpt-ssn", 19.889, 322}}) {
    wi::WhatIfConfig w;
    nm::NetConfig net;
    w.preset = preset;
    wi::apply_preset_defaults(w, net);
    w.specs = wi::parse_specs(w.spec_texts);
    CHECK(w.bandwidths_bps == std::vector<double>{200e6});
    CHECK(net.latency_s == 0.05);
    CHECK(w.baseline == "fp16");  // the bf16 wire's bytes
    const auto r = wi::run_what_if(w, net, bf16_bytes);
    const uint64_t tokens = static_cast<uint64_t>(r.setup.shape.microbatch_size) * 1024;
    CHECK(r.messages.activation == bytes_per_token * tokens);
    REQUIRE(r.rows.size() == 1);
    CHECK(std::abs(r.rows[0].step_s / record_s - 1) < 0.02);
    // The control: the default model on the same set-up (pipelined latency,
    // a link per direction) is more than 4% faster than the record.
    nm::NetConfig duplex = net;
    duplex.link_model = nm::kFullDuplex;
    const auto d = wi::run_what_if(w, duplex, bf16_bytes);
    CHECK(d.rows[0].step_s < 0.96 * record_s);
  }
  // A key given explicitly wins over the preset's default.
  wi::WhatIfConfig w;
  nm::NetConfig net;
  w.preset = "protocol-nanogpt";
  w.spec_texts.forward = "none";
  w.fw_given = true;
  net.link_model = nm::kFullDuplex;
  wi::apply_preset_defaults(w, net);
  CHECK(w.spec_texts.forward == "none");
  CHECK(w.spec_texts.backward == "bf16");
  CHECK(net.link_model == nm::kFullDuplex);
  CHECK(w.baseline == "fp16");
  w = wi::WhatIfConfig{};
  slowpipe::OptionSet o;
  wi::describe_options(w, o);
  o.set("timing.preset", "protocol-nanogpt");
  o.set("timing.baseline", "fp32");  // given: kept
  wi::apply_preset_defaults(w, net);
  CHECK(w.baseline == "fp32");
}
