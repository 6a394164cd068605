// The calibrated compute model (window, statistic, clock, classes, resume
// state) and the analytic model: roofline plus launch floor, optimizer and
// codec seconds from bytes and device constants, never from measurements, and
// the default `net.compute` is analytic on the default device.
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "netmodel/internal/calibrated_model.h"
#include "netmodel/compute_model.h"
#include "netmodel/replay.h"
#include "netmodel/schedule_trace.h"

namespace nm = slowpipe::netmodel;

namespace {

// One stage, M forwards and backwards, one optimizer step: the measured wall
// seconds of micro-batch m are wall[m], the thread CPU seconds cpu[m].
nm::StepTrace step(const std::vector<double>& wall, const std::vector<double>& cpu, bool thread_cpu,
                   double flops = 1e9) {
  nm::StepTrace t;
  t.microbatches = static_cast<int32_t>(wall.size());
  t.thread_cpu = thread_cpu;
  for (size_t m = 0; m < wall.size(); ++m) {
    nm::TraceOp f;
    f.kind = nm::OpKind::kForward;
    f.microbatch = static_cast<int32_t>(m);
    f.compute_s = wall[m];
    f.thread_cpu_s = cpu[m];
    f.flops = flops;
    t.ops.push_back(f);
  }
  return t;
}

nm::TraceOp forward(double flops = 1e9) {
  nm::TraceOp f;
  f.kind = nm::OpKind::kForward;
  f.flops = flops;
  f.compute_s = 123.0;  // what `measured` would replay
  return f;
}

}  // namespace

TEST_CASE("Calibrated: a running statistic over the window, then frozen") {
  auto model = nm::make_compute_model(nm::parse_compute_spec("calibrated:3:median"));
  CHECK(model->spec() == "calibrated:3:median");
  SECTION("the window's steps replay the median of the samples so far") {
    model->observe(step({9, 9, 9}, {1.0, 3.0, 2.0}, true));
    CHECK(model->compute_s(forward()) == 2.0);  // median of {1, 3, 2}, not a wall second
    model->observe(step({9, 9, 9}, {10.0, 10.0, 10.0}, true));
    CHECK(model->compute_s(forward()) == 6.5);  // median of {1, 2, 3, 10, 10, 10}
    model->observe(step({9, 9, 9}, {0.5, 0.5, 0.5}, true));
    const double frozen = model->compute_s(forward());
    CHECK(frozen == 2.0);  // median of the 9 samples {0.5 x3, 1, 2, 3, 10 x3}
    // After the window: a loaded machine's slow step changes nothing.
    model->observe(step({90, 90, 90}, {50.0, 50.0, 50.0}, true));
    CHECK(model->compute_s(forward()) == frozen);
  }
  SECTION("without thread CPU seconds, the wall seconds are the samples") {
    model->observe(step({4.0, 4.0, 5.0}, {1.0, 1.0, 1.0}, false));
    CHECK(model->compute_s(forward()) == 4.0);
  }
  SECTION("each shape is its own class with its own window") {
    model->observe(step({1}, {1.0}, true, 1e9));
    model->observe(step({1}, {1.0}, true, 1e9));
    model->observe(step({1}, {1.0}, true, 1e9));
    model->observe(step({1}, {7.0}, true, 2e9));  // a class first seen late
    CHECK(model->compute_s(forward(1e9)) == 1.0);
    CHECK(model->compute_s(forward(2e9)) == 7.0);
    model->observe(step({1}, {9.0}, true, 2e9));
    CHECK(model->compute_s(forward(2e9)) == 8.0);  // still calibrating: median of {7, 9}
  }
  SECTION("an op never observed replays its own seconds") {
    CHECK(model->compute_s(forward()) == 123.0);
  }
}

TEST_CASE("Calibrated: min statistic, codec classes, spec errors") {
  auto model = nm::make_compute_model(nm::parse_compute_spec("calibrated:2:min"));
  nm::StepTrace t = step({5.0, 3.0}, {5.0, 3.0}, true);
  nm::TraceOp send;
  send.kind = nm::OpKind::kSendActivation;
  send.bytes = 100;
  send.raw_bytes = 400;
  send.encode_s = 0.3;
  send.decode_s = 0.2;
  t.ops.push_back(send);
  send.encode_s = 0.1;
  send.decode_s = 0.4;
  t.ops.push_back(send);
  model->observe(t);
  CHECK(model->compute_s(forward()) == 3.0);
  CHECK(model->encode_s(send) == 0.1);  // min over encode samples
  CHECK(model->decode_s(send) == 0.2);  // min over decode samples
  CHECK(nm::make_compute_model(nm::parse_compute_spec("calibrated"))->spec() ==
        "calibrated:20:min");
  CHECK(nm::make_compute_model(nm::parse_compute_spec("calibrated:7"))->spec() ==
        "calibrated:7:min");
  CHECK_THROWS_AS(nm::make_compute_model(nm::parse_compute_spec("calibrated:0")),
                  slowpipe::UsageError);
  CHECK_THROWS_AS(nm::make_compute_model(nm::parse_compute_spec("calibrated:x")),
                  slowpipe::UsageError);
  CHECK_THROWS_WITH(nm::make_compute_model(nm::parse_compute_spec("calibrated:5:mean")),
                    Catch::Contains("net.compute") && Catch::Contains("mean"));
}

TEST_CASE("Calibrated: the state survives save and load bit for bit") {
  auto a = nm::make_compute_model(nm::parse_compute_spec("calibrated:4:median"));
  a->observe(step({1, 1, 1}, {0.1, 0.30000000000000004, 1.0 / 3.0}, true));
  a->observe(step({1, 1}, {0.7, 0.2}, true, 3e9));
  auto b = nm::make_compute_model(nm::parse_compute_spec("calibrated:4:median"));
  b->load_state(a->save_state());
  CHECK(b->save_state() == a->save_state());
  CHECK(b->compute_s(forward()) == a->compute_s(forward()));
  CHECK(b->compute_s(forward(3e9)) == a->compute_s(forward(3e9)));
  // The window goes on where it stopped: the same next samples, the same seconds.
  a->observe(step({1}, {0.9}, true));
  b->observe(step({1}, {0.9}, true));
  CHECK(b->compute_s(forward()) == a->compute_s(forward()));
  CHECK(b->describe_json() == a->describe_json());
  CHECK(a->describe_json().find("\"statistic\": \"median\"") != std::string::npos);
  CHECK(a->describe_json().find("\"clock\": \"thread-cpu\"") != std::string::npos);
  // A state written by another configuration is refused.
  auto c = nm::make_compute_model(nm::parse_compute_spec("calibrated:5"));
  CHECK_THROWS_AS(c->load_state(a->save_state()), slowpipe::DataError);
  CHECK_THROWS_AS(b->load_state("calibrated:4:median\n0 0 zz\n"), slowpipe::DataError);
}

TEST_CASE("Calibrated: the simulator replays a frozen step time whatever is measured later") {
  nm::NetConfig cfg;
  cfg.preset = "1Gbps";
  cfg.compute = nm::parse_compute_spec("calibrated");
  nm::StepTrace base = nm::build_trace("1f1b", 2, 4, 1, [](nm::TraceOp& op) {
    op.bytes = 4096;
    op.compute_s = op.kind == nm::OpKind::kOptimizer ? 0.001 : 0.01;
    op.encode_s = op.decode_s = 1e-4;
  });
  base.thread_cpu = false;
  nm::Simulator sim(cfg);
  std::vector<double> steps;
  const int W = nm::kDefaultCalibrationSteps;
  for (int k = 0; k < W + 4; ++k) {
    nm::StepTrace t = base;
    // Steps 11 on: a loaded machine, every measured second doubled.
    for (auto& op : t.ops) {
      const double f = k >= W ? 2.0 : 1.0 + 0.01 * (k % 3);
      op.compute_s *= f;
      op.encode_s *= f;
      op.decode_s *= f;
    }
    steps.push_back(sim.replay(t).step_s);
  }
  const double frozen = steps[W - 1];
  for (int k = W; k < W + 4; ++k) CHECK(steps[k] == frozen);
  // A simulator restored from the carry replays the same seconds.
  nm::Simulator resumed(cfg);
  resumed.restore(sim.carry());
  nm::StepTrace t = base;
  for (auto& op : t.ops) op.compute_s *= 3.0;
  CHECK(resumed.replay(t).step_s == frozen);
  CHECK(resumed.elapsed_s() == sim.elapsed_s() + frozen);
  // Under `measured` the same doubling doubles the compute.
  cfg.compute = nm::parse_compute_spec("measured");
  nm::Simulator measured(cfg);
  CHECK(measured.replay(t).step_s > 2 * frozen);
}

TEST_CASE("Analytic: optimizer and codecs from bytes, no measured second enters") {
  const nm::DevicePreset& a100 = nm::find_device("net.compute", "A100");
  auto model = nm::make_compute_model(nm::parse_compute_spec("analytic:A100"));
  nm::TraceOp opt;
  opt.kind = nm::OpKind::kOptimizer;
  opt.compute_s = 0.5;  // measured: ignored
  opt.flops = 10e6;
  opt.memory_bytes = 28e6;
  CHECK(model->compute_s(opt) == 28e6 / (a100.memory_bandwidth_Bps * a100.memory_efficiency));
  opt.memory_bytes = 0;
  CHECK(model->compute_s(opt) == 10e6 / (a100.peak_flops * a100.efficiency));
  nm::TraceOp send;
  send.kind = nm::OpKind::kSendActivation;
  send.bytes = 1000;
  send.raw_bytes = 16000;
  send.encode_s = 0.25;  // measured: ignored
  send.decode_s = 0.75;
  send.bytes = 1000000;  // large enough that streaming outlasts the pass's launches
  send.raw_bytes = 16000000;
  const double stream = 17000000 / (a100.memory_bandwidth_Bps * a100.memory_efficiency);
  REQUIRE(stream > nm::kCodecPassKernels * a100.kernel_launch_s);
  CHECK(model->encode_s(send) == stream);
  CHECK(model->decode_s(send) == stream);
  // A small message: the pass's launches are its floor.
  send.bytes = 10;
  send.raw_bytes = 160;
  CHECK(model->encode_s(send) == nm::kCodecPassKernels * a100.kernel_launch_s);
  // A message sent as is (codec none: wire bytes = fp32 bytes) has no pass.
  send.bytes = send.raw_bytes;
  CHECK(model->encode_s(send) == 0);
  CHECK(model->decode_s(send) == 0);

  // Two traces that differ only in their measured seconds replay identically.
  const auto trace = [](double noise) {
    return nm::build_trace("1f1b", 3, 4, 2, [noise](nm::TraceOp& op) {
      op.bytes = 8192;
      op.raw_bytes = 65536;
      op.flops = op.kind == nm::OpKind::kForward ? 1e9 : op.kind == nm::OpKind::kBackward ? 2e9 : 0;
      op.memory_bytes = op.kind == nm::OpKind::kOptimizer ? 1e7 : 0;
      op.compute_s = 0.01 * noise;
      op.encode_s = op.decode_s = 0.001 * noise;
    });
  };
  nm::NetConfig cfg;
  cfg.preset = "100Mbps";
  cfg.compute = nm::parse_compute_spec("analytic:A100");
  const nm::Timeline x = nm::replay(trace(1.0), cfg);
  const nm::Timeline y = nm::replay(trace(7.3), cfg);
  CHECK(x.step_s == y.step_s);
  CHECK(x.bubble_fraction == y.bubble_fraction);
  for (size_t i = 0; i < x.timing.size(); ++i) CHECK(x.timing[i].end_s == y.timing[i].end_s);
}

TEST_CASE("Analytic: a floor of one launch per kernel, so a tiny op is not free") {
  for (const auto& name : {"RTX4090", "V100", "A100", "H100"}) {
    CAPTURE(name);
    const nm::DevicePreset& d = nm::find_device("net.compute", name);
    REQUIRE(d.kernel_launch_s > 0);
    auto model = nm::make_compute_model(nm::parse_compute_spec(std::string("analytic:") + name));
    // A large op hides its launches: the roofline alone.
    nm::TraceOp big = forward(1e13);
    const double roofline = 1e13 / (d.peak_flops * d.efficiency);
    big.kernels = 12;
    REQUIRE(roofline > 12 * d.kernel_launch_s);
    CHECK(model->compute_s(big) == roofline);
    // A tiny op: its launches, never 0, and twice the kernels take twice as long.
    nm::TraceOp tiny = forward(1e3);
    CHECK(model->compute_s(tiny) < 1e-9);  // no kernels counted: nearly free
    tiny.kernels = 12;
    CHECK(model->compute_s(tiny) == 12 * d.kernel_launch_s);
    tiny.kernels = 24;
    CHECK(model->compute_s(tiny) == 24 * d.kernel_launch_s);
    // Memory-bound: bytes over achieved bandwidth when they outlast the launches.
    nm::TraceOp opt;
    opt.kind = nm::OpKind::kOptimizer;
    opt.memory_bytes = 28e9;
    opt.kernels = 3;
    CHECK(model->compute_s(opt) == 28e9 / (d.memory_bandwidth_Bps * d.memory_efficiency));
    opt.memory_bytes = 28;
    CHECK(model->compute_s(opt) == 3 * d.kernel_launch_s);
  }
}

TEST_CASE("Default compute model: analytic on the default device, host-independent") {
  CHECK(std::string(nm::kDefaultComputeModel) == std::string("analytic:") + nm::kDefaultDevice);
  nm::NetConfig cfg;
  CHECK(cfg.compute.text == nm::kDefaultComputeModel);
  CHECK(nm::make_compute_model(cfg.compute)->spec() == cfg.compute.text);
  CHECK(nm::compute_device_label(cfg.compute) == nm::kDefaultDevice);
  CHECK(nm::compute_device_label("analytic:V100") == "V100");
  CHECK_THAT(nm::compute_device_label("calibrated:20:min"),
             Catch::Contains("host") && Catch::Contains("calibrated"));
  CHECK_THAT(nm::compute_device_label("measured"), Catch::Contains("host"));
  // Two traces of one configuration, one timed on a quiet host and one on a
  // loaded one (every measured second, wall and thread CPU, scaled): the
  // default replays them identically, step after step, because no measured
  // second enters; `measured` (the control) does not.
  const auto trace = [](double load) {
    nm::StepTrace t = nm::build_trace("1f1b", 2, 4, 1, [load](nm::TraceOp& op) {
      op.bytes = 4096;
      op.raw_bytes = 16384;
      const bool fb = op.kind == nm::OpKind::kForward || op.kind == nm::OpKind::kBackward;
      op.flops = fb ? 1e6 : 0;
      op.kernels = fb ? 12 : op.kind == nm::OpKind::kOptimizer ? 4 : 0;
      op.memory_bytes = op.kind == nm::OpKind::kOptimizer ? 1e6 : 0;
      op.compute_s = 0.01 * load;
      op.thread_cpu_s = 0.009 * load;
      op.encode_s = op.decode_s = 1e-4 * load;
    });
    t.thread_cpu = true;
    return t;
  };
  nm::Simulator quiet(cfg), busy(cfg);
  for (int k = 0; k < 3; ++k) {
    const double q = quiet.replay(trace(1.0)).step_s, b = busy.replay(trace(1.0 + 0.4 * k)).step_s;
    CHECK(q == b);
    CHECK(q > 0);
  }
  CHECK(quiet.elapsed_s() == busy.elapsed_s());
  cfg.compute = nm::parse_compute_spec("measured");
  CHECK(nm::replay(trace(1.0), cfg).step_s != nm::replay(trace(1.4), cfg).step_s);
}
