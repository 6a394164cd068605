// What-if timing beyond one step: the fp16 baseline, the whole-run time with
// warm-up epochs (checked against step times replayed by hand), the AQ-SGD
// set-up presets and the usage errors of the new keys. Closed-form wire sizes:
// 4 bytes per element for "none", 2 for "fp16", bits/8 for "qB" (an "aq(qB)"
// steady-state message is sized as "qB").
#include <catch2/catch.hpp>
#include <sstream>

#include "common/errors.h"
#include "netmodel/replay.h"
#include "whatif/what_if.h"

namespace nm = slowpipe::netmodel;
namespace wi = slowpipe::whatif;
namespace md = slowpipe::models;

namespace {

uint64_t run_wire_bytes(const slowpipe::compressors::ChannelSpec& spec_,
                        const std::vector<int64_t>& shape) {
  const std::string& spec = spec_.text();
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  std::string s = spec;
  if (s.rfind("aq(", 0) == 0) s = s.substr(3, s.size() - 4);
  if (s == "none") return 4 * n;
  if (s == "fp16") return 2 * n;
  if (s.size() > 1 && s[0] == 'q') return n * std::stoul(s.substr(1)) / 8;
  throw slowpipe::UsageError("unknown spec " + spec);
}

// The step time of one set of specs, replayed by hand at `bps`.
double step_s(const wi::ResolvedWhatIf& r, const wi::CodecSpecs& specs, double bps) {
  nm::NetConfig net;
  net.bandwidth_bps = bps;
  net.compute =
      nm::parse_compute_spec("analytic:" + r.device);  // what run_what_if times by default
  const auto trace = wi::make_synthetic_trace(r.shape, r.schedule, 1, specs, run_wire_bytes,
                                              nm::find_device("test", r.device));
  nm::Simulator sim(net);
  return sim.replay(trace).step_s;
}

wi::CodecSpecs specs(const std::string& fw, const std::string& bw) {
  wi::SpecTexts texts;
  texts.forward = fw;
  texts.backward = bw;
  return wi::parse_specs(texts);
}

}  // namespace

TEST_CASE("What-if baseline: fp16 messages are half of fp32's, and both are reported") {
  wi::WhatIfConfig w;
  w.specs = specs("q4", "q8");
  w.baseline = "both";
  w.bandwidths_bps = {100e6};
  const auto r = wi::run_what_if(w, nm::NetConfig{}, run_wire_bytes);
  CHECK(r.messages.fp32_activation == 4ull * 1024 * 1600);
  CHECK(r.messages.fp16_activation * 2 == r.messages.fp32_activation);
  // The baseline traces carry those sizes on every activation and gradient send.
  const auto device = nm::find_device("test", "A100");
  const auto t16 = wi::make_synthetic_trace(r.setup.shape, "gpipe", 1, wi::baseline_specs("fp16"),
                                            run_wire_bytes, device);
  const auto t32 = wi::make_synthetic_trace(r.setup.shape, "gpipe", 1, wi::baseline_specs("fp32"),
                                            run_wire_bytes, device);
  REQUIRE(t16.ops.size() == t32.ops.size());
  int sends = 0;
  for (size_t i = 0; i < t16.ops.size(); ++i) {
    if (t32.ops[i].bytes > 0) {
      CHECK(t16.ops[i].bytes * 2 == t32.ops[i].bytes);
      ++sends;
    }
  }
  CHECK(sends == 2 * 7 * 32);
  REQUIRE(r.rows.size() == 1);
  const auto& row = r.rows[0];
  REQUIRE(row.baselines.size() == 2);
  CHECK(row.baselines[0].baseline == "fp32");
  CHECK(row.baselines[1].baseline == "fp16");
  // At 100 Mbit/s the network dominates: fp16 is nearly twice as fast as fp32,
  // and the same compressed step is a smaller speed-up against it.
  CHECK(row.baselines[1].step_s < 0.6 * row.baselines[0].step_s);
  CHECK(row.baselines[1].speedup == Approx(row.baselines[1].step_s / row.step_s));
  CHECK(row.baselines[1].speedup < row.baselines[0].speedup);
  CHECK(wi::baseline_specs("fp16").gradient.text() == "fp16");
  CHECK_THROWS_AS(wi::baseline_specs("bf16"), slowpipe::UsageError);
}

TEST_CASE("What-if whole run: E epochs, W warm-up, from the step times by hand") {
  // Whole-run speed-up = E·T_B / Σ_e T_e, T_e the step of epoch e: a channel
  // sends the baseline's messages in its warm-up epochs, its spec after them.
  wi::WhatIfConfig w;
  w.bandwidths_bps = {100e6, 1e9};
  w.steps_per_epoch = 7;
  const double S = 7;

  SECTION("aq(q4) forward warms up 1 epoch (AQ-SGD's default), the q8 backward does not") {
    w.specs = specs("aq(q4)", "q8");
    w.epochs = 3;
    const auto r = wi::run_what_if(w, nm::NetConfig{}, run_wire_bytes);
    CHECK(r.setup.warmup[0] == 1);
    CHECK(r.setup.warmup[1] == 0);
    for (const auto& row : r.rows) {
      const double tb = step_s(r.setup, specs("none", "none"), row.bandwidth_bps);
      const double tw = step_s(r.setup, specs("none", "q8"), row.bandwidth_bps);
      const double tc = step_s(r.setup, specs("aq(q4)", "q8"), row.bandwidth_bps);
      const auto& b = row.baselines.at(0);
      CHECK(b.step_s == Approx(tb).epsilon(1e-12));
      CHECK(row.step_s == Approx(tc).epsilon(1e-12));
      CHECK(b.run_s == Approx(3 * S * tb).epsilon(1e-12));
      CHECK(b.compressed_run_s == Approx(S * (tw + 2 * tc)).epsilon(1e-12));
      CHECK(b.run_speedup == Approx(3 * tb / (tw + 2 * tc)).epsilon(1e-12));
      CHECK(tw < tb);  // the backward is already compressed in warm-up
      CHECK(b.run_speedup < b.speedup);
    }
  }
  SECTION("every channel warms up W epochs: E·T_B / (W·T_B + (E−W)·T_c)") {
    w.specs = specs("aq(q4)", "q8");
    w.epochs = 3;
    w.warmup_epochs = 1;
    w.baseline = "both";
    const auto r = wi::run_what_if(w, nm::NetConfig{}, run_wire_bytes);
    for (const auto& row : r.rows) {
      for (const auto& b : row.baselines) {
        const double tb = b.step_s, tc = row.step_s;
        CHECK(b.run_speedup == Approx(3 * tb / (tb + 2 * tc)).epsilon(1e-12));
      }
    }
    // At 100 Mbit/s: a per-step speed-up above 5 is about 2.2 over the run.
    const auto& slow = r.rows[0].baselines[0];
    CHECK(slow.speedup > 5.0);
    CHECK(slow.run_speedup == Approx(2.2).margin(0.05));
  }
  SECTION("no warm-up: the whole-run speed-up is the per-step one") {
    w.specs = specs("q4", "q8");
    w.epochs = 5;
    const auto r = wi::run_what_if(w, nm::NetConfig{}, run_wire_bytes);
    for (const auto& row : r.rows) {
      CHECK(row.baselines[0].run_speedup == Approx(row.baselines[0].speedup).epsilon(1e-12));
    }
  }
  SECTION("warm-ups of different lengths: each epoch its own mix") {
    w.specs = specs("aq(q2)", "q4");
    w.epochs = 4;
    w.warmup_epochs = 1;     // both channels in epoch 0
    w.aq_warmup_epochs = 2;  // the aq forward in epochs 0 and 1
    w.baseline = "fp16";
    const auto r = wi::run_what_if(w, nm::NetConfig{}, run_wire_bytes);
    CHECK(r.setup.warmup[0] == 2);
    CHECK(r.setup.warmup[1] == 1);
    for (const auto& row : r.rows) {
      const double bps = row.bandwidth_bps;
      const double t0 = step_s(r.setup, specs("fp16", "fp16"), bps);
      const double t1 = step_s(r.setup, specs("fp16", "q4"), bps);
      const double tc = step_s(r.setup, specs("aq(q2)", "q4"), bps);
      const auto& b = row.baselines.at(0);
      CHECK(b.baseline == "fp16");
      CHECK(b.compressed_run_s == Approx(S * (t0 + t1 + 2 * tc)).epsilon(1e-12));
      CHECK(b.run_speedup == Approx(4 * t0 / (t0 + t1 + 2 * tc)).epsilon(1e-12));
    }
  }
}

TEST_CASE("What-if presets: AQ-SGD's GPT-2 XL and DeBERTa set-ups") {
  const auto& gpt = wi::find_timing_preset("timing.preset", "aqsgd-gpt2xl");
  CHECK(gpt.shape.layers == 48);
  CHECK(gpt.shape.hidden == 1600);
  CHECK(gpt.shape.seq == 1024);
  CHECK(gpt.shape.stages == 8);
  CHECK(gpt.shape.microbatch_size == 1);
  CHECK(gpt.shape.batch == 32);
  CHECK(gpt.shape.lm_head);
  CHECK(md::describe_stage_layers(gpt.shape) == "6,6,6,6,7,7,7,3");
  CHECK(gpt.schedule == "gpipe");
  CHECK(gpt.device == "V100");
  CHECK(gpt.epochs == 10);
  CHECK(gpt.warmup_epochs == 1);
  // The last stage's 3 layers plus the LM head weigh less than a 7-layer stage.
  CHECK(md::forward_flops(gpt.shape, 7) < md::forward_flops(gpt.shape, 4));
  const auto& deb = wi::find_timing_preset("timing.preset", "aqsgd-deberta");
  CHECK(deb.shape.layers == 48);
  CHECK(deb.shape.hidden == 1536);
  CHECK(deb.shape.seq == 256);
  CHECK(deb.shape.vocab == 128100);
  CHECK(deb.shape.microbatch_size == 8);
  CHECK(deb.shape.batch == 32);
  CHECK(deb.shape.score_terms == 3);
  CHECK_FALSE(deb.shape.lm_head);
  CHECK(md::describe_stage_layers(deb.shape) == "6,6,6,6,6,6,6,6");
  CHECK(deb.device == "V100");

  wi::WhatIfConfig w;
  slowpipe::OptionSet o;
  wi::describe_options(w, o);
  // Keys given before the preset still win over it (no order dependence).
  o.set("timing.epochs", "3");
  o.set("timing.preset", "aqsgd-deberta");
  auto r = wi::resolve_what_if(w);
  CHECK(r.epochs == 3);
  CHECK(r.shape.seq == 256);
  CHECK(r.shape.batch / r.shape.microbatch_size == 4);
  CHECK(r.device == "V100");
  CHECK(r.warmup[0] == 1);  // the preset's warm-up covers every boundary channel
  CHECK(r.warmup[1] == 1);
  o.set("timing.device", "A100");
  o.set("timing.model", "gpt2-small");
  r = wi::resolve_what_if(w);
  CHECK(r.device == "A100");
  CHECK(r.shape.name == "gpt2-small");
  // A preset with another stage count falls back to the even split.
  o.set("timing.preset", "aqsgd-gpt2xl");
  o.set("timing.model", "gpt2-xl");
  w.model.clear();
  o.set("timing.stages", "4");
  r = wi::resolve_what_if(w);
  CHECK(md::describe_stage_layers(r.shape) == "12,12,12,12");
  o.set("timing.preset", "none");
  CHECK(w.preset.empty());
}

TEST_CASE("What-if: the printout states every assumption") {
  wi::WhatIfConfig w;
  w.preset = "aqsgd-gpt2xl";
  w.specs = specs("aq(q4)", "q8");
  w.baseline = "both";
  w.epochs = 3;
  w.bandwidths_bps = {10e9, 100e6};
  std::ostringstream os;
  wi::run_timing(w, nm::NetConfig{}, run_wire_bytes, os);
  const std::string out = os.str();
  for (const char* fact :
       {"set-up aqsgd-gpt2xl", "per stage 6,6,6,6,7,7,7,3", "schedule gpipe",
        "32 micro-batches of 1", "peak 125 TFLOP/s", "utilisation 35%",
        "message activation [1,1024,1600] fw aq(q4): 800KiB (fp32 6.25MiB, fp16 3.125MiB)",
        "message activation-gradient [1,1024,1600] bw q8: 1.5625MiB",
        "message parameter-gradient all-reduce", "not sent with 1 replica", "50us",
        "efficiency 0.9564", "3 epoch(s) x 100 steps", "fw 1, bw 1, grad 0", "fp32 step s",
        "fp16 step s", "run h (fp16 warm-up)", "100Mbps"}) {
    CAPTURE(fact);
    CHECK_THAT(out, Catch::Contains(fact));
  }
}

TEST_CASE("What-if: bad baselines, presets and epoch counts are usage errors") {
  wi::WhatIfConfig w;
  slowpipe::OptionSet o;
  wi::describe_options(w, o);
  CHECK_THROWS_WITH(o.set("timing.baseline", "fp8"), Catch::Contains("timing.baseline"));
  CHECK_THROWS_WITH(o.set("timing.preset", "aqsgd-llama"),
                    Catch::Contains("timing.preset") && Catch::Contains("aqsgd-gpt2xl"));
  CHECK_THROWS_WITH(o.set("timing.epochs", "0"), Catch::Contains("timing.epochs"));
  CHECK_THROWS_WITH(o.set("timing.warmup_epochs", "-1"), Catch::Contains("timing.warmup_epochs"));
  CHECK_THROWS_AS(o.set("timing.steps_per_epoch", "0"), slowpipe::UsageError);
  // Fewer epochs than a channel's warm-up: never compressed.
  o.set("timing.fw", "aq(q4)");
  w.specs = wi::parse_specs(w.spec_texts);
  o.set("timing.epochs", "1");
  o.set("timing.aq_warmup_epochs", "2");
  CHECK_THROWS_WITH(wi::resolve_what_if(w),
                    Catch::Contains("timing.aq_warmup_epochs") && Catch::Contains("timing.epochs"));
  o.set("timing.aq_warmup_epochs", "1");
  CHECK(wi::resolve_what_if(w).warmup[0] == 1);  // W = E is allowed
  o.set("timing.warmup_epochs", "3");
  CHECK_THROWS_WITH(wi::run_what_if(w, nm::NetConfig{}, run_wire_bytes),
                    Catch::Contains("timing.warmup_epochs"));
  o.set("timing.warmup_epochs", "0");
  o.set("timing.stages", "64");  // more stages than GPT-2 XL has layers
  CHECK_THROWS_WITH(wi::resolve_what_if(w), Catch::Contains("timing.stages = 64"));
  // A layer split that does not fit the stages.
  auto shape = md::find_model_shape("t", "gpt2-xl");
  shape.stage_layers = {6, 6, 6, 6, 7, 7, 7, 2};
  CHECK_THROWS_WITH(md::check_model_shape(shape), Catch::Contains("sum to 48"));
  shape.stage_layers = {24, 24};
  CHECK_THROWS_AS(md::check_model_shape(shape), slowpipe::UsageError);
}

TEST_CASE("What-if: net.compute at its default times timing.device; another model is kept") {
  nm::NetConfig net;
  CHECK(wi::with_timing_device(net, "V100").compute.text == "analytic:V100");
  net.compute = nm::parse_compute_spec("measured");
  CHECK(wi::with_timing_device(net, "V100").compute.text == "measured");
  // The V100 preset, timed by default, equals the same replay under analytic:V100.
  wi::WhatIfConfig w;
  w.preset = "aqsgd-gpt2xl";
  w.bandwidths_bps = {1e9};
  const auto r = wi::run_what_if(w, nm::NetConfig{}, run_wire_bytes);
  REQUIRE(r.setup.device == "V100");
  CHECK(r.rows[0].step_s == step_s(r.setup, wi::CodecSpecs{}, 1e9));
  nm::NetConfig h100;
  h100.compute = nm::parse_compute_spec("analytic:H100");
  CHECK(wi::run_what_if(w, h100, run_wire_bytes).rows[0].step_s < r.rows[0].step_s);
}

TEST_CASE("What-if: many replicas replay one of them, the same step as the full replay") {
  wi::WhatIfConfig c;
  c.model = "gpt2-small";
  c.bandwidths_bps = {1e9};
  c.grad_sync = slowpipe::compressors::GradSync::kMomentum;
  nm::NetConfig net;
  net.nic_bandwidth_bps = 2e9;
  c.replicas = 6;
  const wi::WhatIfResult r = wi::run_what_if(c, net, run_wire_bytes);
  // By hand: the full trace of 6 replicas through the full replay.
  nm::NetConfig point = wi::with_timing_device(net, r.setup.device);
  point.bandwidth_bps = 1e9;
  auto trace = wi::make_synthetic_trace(r.setup.shape, r.setup.schedule, 6, wi::CodecSpecs{},
                                        run_wire_bytes, nm::find_device("test", r.setup.device));
  trace.sharded_exchange = true;
  const double full = nm::Simulator(point, /*fold_replicas=*/false).replay(trace).step_s;
  CHECK(r.rows.at(0).step_s == Approx(full).epsilon(1e-9));
  // 100,000 replicas fit (one replica's ops); with jitter the replicas differ
  // and the limit is the full replay's.
  c.grad_sync = slowpipe::compressors::GradSync::kAllReduce;
  c.replicas = wi::kMaxTimingReplicas;
  CHECK(wi::run_what_if(c, nm::NetConfig{}, run_wire_bytes).rows.at(0).step_s > 0);
  nm::NetConfig jitter;
  jitter.jitter_s = 1e-3;
  c.replicas = wi::kMaxTimingReplicasAsymmetric + 1;
  CHECK_THROWS_WITH(wi::run_what_if(c, jitter, run_wire_bytes),
                    Catch::Contains("timing.replicas") && Catch::Contains("net.jitter"));
}
