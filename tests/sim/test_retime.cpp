// slowpipe retime's step rebuilding (sim/internal/retime_trace.h): the
// skeleton the engine records with `none` channels, given a logged step's
// per-boundary bytes, is the trace of that step with its real codecs, op for
// op and field for field (a differential test against the engine), so both
// replay to the same simulated time; totals that do not split into equal
// messages, or are missing, are refused.
// ATen first: Catch2 must define CHECK after any library macro of that name.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "common/errors.h"
#include "engine_fixture.h"
#include "netmodel/replay.h"
#include "sim/internal/retime_trace.h"
#include "sim/retime.h"
#include "tests/common/parsed_spec.h"

namespace sim = slowpipe::sim;
namespace nm = slowpipe::netmodel;

using slowpipe::test::parsed;

namespace {

// The tiny GPT of engine_fixture.h as a training configuration.
slowpipe::config::TrainConfig tiny_config(int stages, int replicas) {
  slowpipe::config::TrainConfig c;
  c.data.name = "text";
  c.data.path = slowpipe::test::corpus_path();
  c.model.name = "gpt";
  c.model.layers = 2;
  c.model.d_model = 32;
  c.model.heads = 2;
  c.model.seq_len = 16;
  c.pipeline.stages = stages;
  c.pipeline.replicas = replicas;
  c.pipeline.microbatches = 2;
  c.pipeline.batch_size = 8;
  c.optim.name = "adamw";
  c.run.seed = 7;
  return c;
}

// Each boundary's and chunk's bytes summed, as the train table logs them.
sim::LoggedBytes logged(const sim::StepResult& r) {
  sim::LoggedBytes b;
  for (const auto& s : r.fw) b.fw.push_back(static_cast<double>(s.bytes));
  for (const auto& s : r.bw) b.bw.push_back(static_cast<double>(s.bytes));
  for (const auto& s : r.grad) b.grad.push_back(static_cast<double>(s.bytes));
  return b;
}

}  // namespace

TEST_CASE("Retime: the rebuilt skeleton with the logged bytes is the real step's trace") {
  const slowpipe::config::TrainConfig cfg = tiny_config(3, 2);
  int64_t samples = 0;
  nm::StepTrace rebuilt = sim::step_trace_skeleton(cfg, &samples);
  CHECK(samples == 8);

  auto data = slowpipe::test::text_data(16);
  auto setup = slowpipe::test::gpt_setup(*data, 3);
  setup.pipeline.replicas = 2;
  setup.pipeline.microbatches = 2;
  setup.compress.fw = parsed("q2");
  setup.compress.bw = parsed("topk:0.1");
  setup.compress.grad = slowpipe::compressors::GradientSpec::parse("q4");
  sim::PipelineEngine engine(setup);
  std::vector<int64_t> idx = {0, 1, 2, 3, 4, 5, 6, 7};
  const sim::StepResult real =
      engine.train_step(data->get(slowpipe::models::Split::kTrain, idx), 0, 10);
  sim::set_message_bytes(rebuilt, logged(real), 1);
  REQUIRE(rebuilt.ops.size() == real.trace.ops.size());
  int messages = 0;
  for (size_t i = 0; i < rebuilt.ops.size(); ++i) {
    const nm::TraceOp &a = rebuilt.ops[i], &b = real.trace.ops[i];
    INFO("op " << i << ": " << nm::op_kind_name(b.kind));
    CHECK((a.kind == b.kind && a.device == b.device && a.chunk == b.chunk && a.peer == b.peer &&
           a.microbatch == b.microbatch && a.replica == b.replica));
    CHECK((a.flops == b.flops && a.kernels == b.kernels && a.memory_bytes == b.memory_bytes));
    CHECK((a.raw_bytes == b.raw_bytes && a.bytes == b.bytes));
    if (b.raw_bytes > 0) ++messages;
  }
  CHECK(messages == 2 * (2 * 2 + 2 * 2 + 3));  // replicas x (fw + bw sends, all-reduces)
  nm::NetConfig net;
  net.preset = "100Mbps";
  CHECK(nm::replay(rebuilt, net).step_s == nm::replay(real.trace, net).step_s);
  // Control: without the logged bytes (fp32 everywhere) the step is slower.
  CHECK(nm::replay(sim::step_trace_skeleton(cfg, nullptr), net).step_s >
        nm::replay(real.trace, net).step_s);
}

TEST_CASE("Retime: message totals that do not split into equal messages are refused") {
  nm::StepTrace t;
  t.stages = 2;
  t.microbatches = 2;
  for (int m = 0; m < 2; ++m) {
    nm::TraceOp op;
    op.kind = nm::OpKind::kSendActivation;
    op.chunk = 0;
    op.peer = 1;
    op.microbatch = m;
    t.ops.push_back(op);
  }
  sim::LoggedBytes b;
  b.fw = {100};
  sim::set_message_bytes(t, b, 1);
  CHECK(t.ops[0].bytes == 50);
  CHECK(t.ops[1].bytes == 50);
  b.fw = {101};
  CHECK_THROWS_AS(sim::set_message_bytes(t, b, 2), slowpipe::DataError);
  b.fw = {NAN};
  CHECK_THROWS_AS(sim::set_message_bytes(t, b, 3), slowpipe::DataError);
  b.fw = {};
  CHECK_THROWS_AS(sim::set_message_bytes(t, b, 4), slowpipe::DataError);
}

TEST_CASE("Retime: only machine-independent clocks") {
  CHECK(sim::machine_independent_clock(slowpipe::netmodel::parse_compute_spec("analytic:RTX4090")));
  CHECK(sim::machine_independent_clock(slowpipe::netmodel::parse_compute_spec("fixed:0.01/0.02")));
  for (const char* spec : {"measured", "scaled:2", "calibrated", "calibrated:20:min"}) {
    CHECK_FALSE(sim::machine_independent_clock(slowpipe::netmodel::parse_compute_spec(spec)));
  }
}
