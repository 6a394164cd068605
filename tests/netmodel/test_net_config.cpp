// net.* options, presets, link overrides and compute models.
#include <catch2/catch.hpp>
#include <cmath>

#include "common/errors.h"
#include "common/options.h"
#include "netmodel/compute_model.h"
#include "netmodel/net_config.h"

namespace nm = slowpipe::netmodel;

TEST_CASE("NetConfig: preset, explicit overrides, and errors naming the key") {
  nm::NetConfig c;
  slowpipe::OptionSet o;
  nm::describe_options(c, o);
  o.set("net.preset", "geo-us-west-east");
  CHECK(nm::effective_bandwidth_bps(c) == Approx(0.79e9));
  CHECK(nm::effective_latency_s(c) == Approx(67e-3));
  o.set("net.bandwidth", "100Mbps");  // explicit bandwidth wins, latency stays the preset's
  o.set("net.preset", "1Gbps");       // whatever the order
  CHECK(nm::effective_bandwidth_bps(c) == Approx(100e6));
  CHECK(nm::effective_latency_s(c) == Approx(50e-6));
  o.set("net.latency", "10ms");
  CHECK(nm::effective_latency_s(c) == Approx(10e-3));
  o.set("net.overhead", "64B");
  CHECK(c.overhead_bytes == 64);
  o.set("net.overhead", "20us");
  CHECK(c.overhead_s == Approx(20e-6));
  CHECK(c.overhead_bytes == 0);
  CHECK_THROWS_WITH(o.set("net.preset", "dialup"), Catch::Contains("net.preset"));
  CHECK_THROWS_WITH(o.set("net.bandwidth", "fast"), Catch::Contains("net.bandwidth"));
  CHECK_THROWS_WITH(o.set("net.links", "0-0:1Gbps"), Catch::Contains("net.links"));
  CHECK_THROWS_AS(o.set("net.efficiency", "1.5"), slowpipe::UsageError);
  CHECK(std::isinf(nm::find_net_preset("none").bandwidth_bps));
  for (const char* p : {"100Gbps", "10Gbps", "1Gbps", "500Mbps", "300Mbps", "100Mbps"}) {
    CHECK_NOTHROW(nm::find_net_preset(p));
  }
}

TEST_CASE("NetConfig: link overrides and host placement") {
  const auto o = nm::parse_link_overrides("net.links", "3-4:100Mbps:20ms, 0-1:geo-us-west-east");
  REQUIRE(o.size() == 2);
  CHECK(o[0].host_a == 3);
  CHECK(o[0].bandwidth_bps == Approx(100e6));
  CHECK(o[0].latency_s == Approx(20e-3));
  CHECK(o[1].bandwidth_bps == Approx(0.79e9));
  CHECK(o[1].latency_s == Approx(67e-3));
  CHECK_THROWS_AS(nm::parse_link_overrides("net.links", "3:1Gbps"), slowpipe::UsageError);
  nm::NetConfig c;
  c.stages_per_host = 2;
  CHECK(nm::host_of(c, 8, 0, 3) == 1);
  CHECK(nm::host_of(c, 8, 1, 0) == 4);
}

TEST_CASE("NetConfig: net.links and net.compute are parsed once, where the option is read") {
  nm::NetConfig c;
  slowpipe::OptionSet o;
  nm::describe_options(c, o);
  CHECK(c.links.empty());
  CHECK(c.compute.model == "analytic");
  CHECK(c.compute.device == nm::kDefaultDevice);
  CHECK(o.get("net.compute") == nm::kDefaultComputeModel);
  o.set("net.links", "3-4:100Mbps:20ms, 0-1:2Gbps");
  REQUIRE(c.links.size() == 2);
  CHECK(c.links[0].host_b == 4);
  CHECK(c.links[0].latency_s == Approx(20e-3));
  CHECK(c.links[1].latency_s == -1);  // no preset named: the default link's
  // The text as given is what the log and the summary line print.
  CHECK(o.get("net.links") == "3-4:100Mbps:20ms, 0-1:2Gbps");
  CHECK_THAT(nm::describe(c), Catch::EndsWith(", links 3-4:100Mbps:20ms, 0-1:2Gbps"));
  CHECK_THROWS_WITH(o.set("net.links", "1-2"), Catch::Contains("net.links"));
  o.set("net.compute", "calibrated");
  CHECK(c.compute.model == "calibrated");
  CHECK(c.compute.calibration_steps == nm::kDefaultCalibrationSteps);
  CHECK_FALSE(c.compute.calibration_median);
  CHECK(o.get("net.compute") == "calibrated");  // as given, not "calibrated:20:min"
  CHECK(nm::make_compute_model(c.compute)->spec() == "calibrated:20:min");
  o.set("net.compute", "calibrated:7:median");
  CHECK(c.compute.calibration_steps == 7);
  CHECK(c.compute.calibration_median);
  o.set("net.compute", "fixed:0.1/0.3");
  CHECK(c.compute.forward_s == 0.1);
  CHECK(c.compute.backward_s == 0.3);
  CHECK(nm::compute_device_label(c.compute) == "fixed:0.1/0.3");
  o.set("net.compute", "scaled:4");
  CHECK(c.compute.scale == 4);
  CHECK(nm::compute_device_label(c.compute) == "host-timed (scaled:4)");
  o.set("net.compute", "analytic:V100");
  CHECK(nm::compute_device_label(c.compute) == "V100");
  // A bad value is refused when it is read, with the message the model gave.
  CHECK_THROWS_WITH(o.set("net.compute", "analytic:TPU"),
                    Catch::StartsWith("bad value for 'net.compute': unknown device 'TPU'"));
  CHECK_THROWS_WITH(
      o.set("net.compute", "guess"),
      Catch::StartsWith("bad value for 'net.compute': unknown compute model 'guess'"));
  CHECK(c.compute.text == "analytic:V100");  // left as it was
  // The label of a logged value (study/) agrees with the parsed one.
  for (const char* text : {"analytic:A100", "fixed:0.01", "measured", "calibrated:3"}) {
    CHECK(nm::compute_device_label(std::string(text)) ==
          nm::compute_device_label(nm::parse_compute_spec(text)));
  }
}

TEST_CASE("ComputeModel: the four models and their errors") {
  nm::TraceOp f;
  f.kind = nm::OpKind::kForward;
  f.compute_s = 2.0;
  f.flops = 312e12;
  f.encode_s = 0.5;
  CHECK(nm::make_compute_model(nm::parse_compute_spec("measured"))->compute_s(f) == 2.0);
  CHECK(nm::make_compute_model(nm::parse_compute_spec("scaled:4"))->compute_s(f) == 0.5);
  CHECK(nm::make_compute_model(nm::parse_compute_spec("analytic:A100"))->compute_s(f) ==
        Approx(1.0 / 0.40));
  CHECK(nm::make_compute_model(nm::parse_compute_spec("fixed:0.1/0.3"))->compute_s(f) == 0.1);
  nm::TraceOp b = f;
  b.kind = nm::OpKind::kBackward;
  CHECK(nm::make_compute_model(nm::parse_compute_spec("fixed:0.1/0.3"))->compute_s(b) == 0.3);
  CHECK(nm::make_compute_model(nm::parse_compute_spec("fixed:0.1"))->encode_s(f) == 0.0);
  CHECK(nm::make_compute_model(nm::parse_compute_spec("measured"))->encode_s(f) == 0.5);
  CHECK_THROWS_WITH(nm::make_compute_model(nm::parse_compute_spec("analytic:TPU")),
                    Catch::Contains("net.compute"));
  CHECK_THROWS_AS(nm::make_compute_model(nm::parse_compute_spec("scaled:0")), slowpipe::UsageError);
  CHECK_THROWS_AS(nm::make_compute_model(nm::parse_compute_spec("scaled")), slowpipe::UsageError);
  CHECK_THROWS_AS(nm::make_compute_model(nm::parse_compute_spec("guess")), slowpipe::UsageError);
}
