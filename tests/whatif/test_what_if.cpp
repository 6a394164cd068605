// What-if timing: synthetic traces of the shape presets, analytic FLOPs, and
// the bandwidth sweep, with a closed-form wire-size callback (4 bytes per
// element for "none", 2 for "fp16", bits/8 per element for "qB"). Baselines,
// whole runs and the AQ-SGD presets: test_what_if_run.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>

#include "common/errors.h"
#include "netmodel/replay.h"
#include "whatif/what_if.h"

namespace nm = slowpipe::netmodel;
namespace wi = slowpipe::whatif;
namespace md = slowpipe::models;

namespace {
uint64_t wire_bytes(const slowpipe::compressors::ChannelSpec& spec_,
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

TEST_CASE("Model shapes: GPT-2 XL has 1.5B parameters and the paper's layout") {
  const auto& g = md::find_model_shape("timing.model", "gpt2-xl");
  CHECK(g.layers == 48);
  CHECK(g.hidden == 1600);
  CHECK(g.seq == 1024);
  CHECK(g.stages == 8);
  double params = 0;
  for (int s = 0; s < g.stages; ++s) params += md::stage_parameters(g, s);
  CHECK(params == Approx(1.557e9).epsilon(0.01));
  // forward FLOPs ~ 2 x params x tokens (plus attention): within 20%
  double flops = 0;
  for (int s = 0; s < g.stages; ++s) flops += md::forward_flops(g, s);
  CHECK(flops / (2 * params * 1024) == Approx(1.1).epsilon(0.1));
  CHECK_THROWS_WITH(md::find_model_shape("timing.model", "llama"), Catch::Contains("gpt2-xl"));
}

TEST_CASE("Synthetic trace: byte sizes from the callback, FLOPs per op") {
  const auto& g = md::find_model_shape("timing.model", "gpt2-xl");
  wi::CodecSpecs specs;
  specs.forward = slowpipe::compressors::ChannelSpec::parse("q4", /*backward=*/false);
  specs.backward = slowpipe::compressors::ChannelSpec::parse("q8", /*backward=*/true);
  const auto t = wi::make_synthetic_trace(g, "gpipe", 2, specs, wire_bytes,
                                          nm::find_device("timing.device", "A100"));
  CHECK(t.microbatches == 32);
  size_t acts = 0, grads = 0, reduces = 0;
  for (const auto& op : t.ops) {
    if (op.kind == nm::OpKind::kSendActivation) {
      CHECK(op.bytes == 1024 * 1600 / 2);
      ++acts;
    }
    if (op.kind == nm::OpKind::kSendGradient) {
      CHECK(op.bytes == 1024 * 1600);
      ++grads;
    }
    if (op.kind == nm::OpKind::kAllReduce) ++reduces;
    if (op.kind == nm::OpKind::kBackward)
      CHECK(op.flops == Approx(2 * md::forward_flops(g, op.chunk)));
  }
  CHECK(acts == 2 * 7 * 32);
  CHECK(grads == 2 * 7 * 32);
  CHECK(reduces == 2 * 8);
}

TEST_CASE("Synthetic trace: a step too large to hold is refused before it is built") {
  auto g = md::find_model_shape("timing.model", "gpt2-xl");
  g.batch = 16777216;  // 16 Mi micro-batches of 1 sample: ~500 M ops
  wi::CodecSpecs specs;
  const auto device = nm::find_device("timing.device", "A100");
  CHECK_THROWS_WITH(wi::make_synthetic_trace(g, "gpipe", 1, specs, wire_bytes, device),
                    Catch::Contains("timing.microbatch"));
  g.microbatch_size = 65536;  // 256 micro-batches: fine
  CHECK(wi::make_synthetic_trace(g, "gpipe", 1, specs, wire_bytes, device).microbatches == 256);
}

TEST_CASE("What-if: compression pays off more as bandwidth drops") {
  wi::WhatIfConfig w;
  w.specs.forward = slowpipe::compressors::ChannelSpec::parse("q2", /*backward=*/false);
  w.specs.backward = slowpipe::compressors::ChannelSpec::parse("q4", /*backward=*/true);
  nm::NetConfig net;  // 10Gbps preset, 50 us
  const auto r = wi::run_what_if(w, net, wire_bytes);
  REQUIRE(r.rows.size() == 5);
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    REQUIRE(row.baselines.size() == 1);
    const auto& fp32 = row.baselines[0];
    CHECK(fp32.baseline == "fp32");
    CHECK(row.step_s <= fp32.step_s);
    CHECK(fp32.speedup == Approx(fp32.step_s / row.step_s));
    CHECK(row.samples_per_s == Approx(32 / row.step_s));
    if (i > 0) {
      CHECK(fp32.speedup >= r.rows[i - 1].baselines[0].speedup);  // bandwidths are decreasing
      CHECK(fp32.step_s >= r.rows[i - 1].baselines[0].step_s);
    }
  }
  CHECK(r.rows.back().baselines[0].speedup > 2.0);  // 100 Mbit/s: fp32 activations dominate
  // fp32 "compressed" run: speed-up is exactly 1
  wi::WhatIfConfig plain;
  for (const auto& row : wi::run_what_if(plain, net, wire_bytes).rows) {
    CHECK(row.baselines[0].speedup == 1.0);
    CHECK(row.baselines[0].run_speedup == 1.0);
  }
  std::ostringstream os;
  wi::print_what_if(w, net, r, os);
  CHECK_THAT(os.str(), Catch::Contains("100Mbps") && Catch::Contains("speed-up") &&
                           Catch::Contains("vs fp32"));
}

TEST_CASE("What-if: options and a network-free check against the compute bound") {
  wi::WhatIfConfig w;
  slowpipe::OptionSet o;
  wi::describe_options(w, o);
  o.set("timing.bandwidth", "1Gbps,100Mbps");
  o.set("timing.model", "deberta-xxl");
  o.set("timing.schedule", "1f1b");
  CHECK(w.bandwidths_bps == std::vector<double>{1e9, 100e6});
  CHECK_THROWS_WITH(o.set("timing.model", "bert"), Catch::Contains("timing.model"));
  CHECK_THROWS_AS(o.set("timing.bandwidth", "fast"), slowpipe::UsageError);
  // Empty lists and empty elements are errors, not skipped.
  for (const char* bad : {"", ",", "1Gbps,,", "1Gbps,", ",1Gbps", "1Gbps, ,100Mbps"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(o.set("timing.bandwidth", bad),
                      Catch::Contains("timing.bandwidth") && Catch::Contains("empty"));
  }
  CHECK(w.bandwidths_bps == std::vector<double>{1e9, 100e6});
  o.set("timing.bandwidth", "1GBps");  // bytes per second
  CHECK(w.bandwidths_bps == std::vector<double>{8e9});
  // With an ideal network GPipe step time = (M+S-1)(tf+tb) of the slowest stage
  // is bounded below by the compute of one stage.
  nm::NetConfig none;
  none.preset = "none";
  w.bandwidths_bps = {1e15};
  const auto r = wi::run_what_if(w, none, wire_bytes);
  const auto& shape = r.setup.shape;
  const auto& dev = nm::find_device("timing.device", "A100");
  const double stage_s = 3 * md::forward_flops(shape, 0) / (dev.peak_flops * dev.efficiency);
  CHECK(r.rows[0].baselines[0].step_s >= 32 * stage_s);
  // Plus the slowest optimizer step (AdamW: 28 bytes of memory traffic per
  // parameter).
  double params = 0;
  for (int s = 0; s < shape.stages; ++s) params = std::max(params, md::stage_parameters(shape, s));
  const double optimizer_s = 28 * params / (dev.memory_bandwidth_Bps * dev.memory_efficiency);
  CHECK(r.rows[0].baselines[0].step_s <= (32 + 7) * stage_s * 1.2 + optimizer_s);
}
