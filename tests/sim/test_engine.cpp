// The pipeline engine: exact cuts, schedules, micro-batches, replicas, the trace.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <memory>

#include "compressors/channels/factory.h"
#include "engine_fixture.h"
#include "models/facts/model_shape.h"
#include "netmodel/replay.h"
#include "pipeline/schedule.h"
#include "sim/engine_parts.h"
#include "tests/common/parsed_spec.h"

using slowpipe::test::parsed;

namespace {

using slowpipe::sim::ChannelRole;
using slowpipe::sim::EngineSetup;
using slowpipe::sim::PipelineEngine;

void require_close(const std::vector<double>& a, const std::vector<double>& b, double rel) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("step " << i << ": " << a[i] << " vs " << b[i]);
    REQUIRE(std::isfinite(a[i]));
    REQUIRE(std::abs(a[i] - b[i]) <= rel * std::abs(b[i]));
  }
}

// A channel that records every transfer (role, index, replica, first id) and
// hands it on to a real, stateful compressing channel.
struct Record {
  ChannelRole role;
  int index;
  int replica;
  int64_t first_id;
};

class RecordingChannel : public slowpipe::compressors::Channel {
 public:
  RecordingChannel(std::shared_ptr<std::vector<Record>> log, ChannelRole role, int index,
                   int replica)
      : log_(std::move(log)), role_(role), index_(index), replica_(replica) {
    slowpipe::compressors::ChannelContext ctx;
    ctx.num_samples = 4096;
    ctx.warmup_epochs = 0;
    inner_ = slowpipe::compressors::make_channel(
        parsed(role == ChannelRole::kForward ? "aq(q4)" : "ef(q8)"), ctx);
  }
  // One record per transfer: the engine's transfer() calls send() once.
  void send(const at::Tensor& x, const at::Tensor& ids, slowpipe::compressors::Message& msg,
            slowpipe::compressors::TransferStats* stats) override {
    log_->push_back({role_, index_, replica_, ids.defined() ? ids[0].item<int64_t>() : -1});
    inner_->send(x, ids, msg, stats);
  }
  at::Tensor receive(const slowpipe::compressors::Message& msg,
                     const slowpipe::compressors::Shape& shape, const at::Tensor& ids,
                     slowpipe::compressors::TransferStats* stats) override {
    return inner_->receive(msg, shape, ids, stats);
  }
  at::Tensor infer(const at::Tensor& x, slowpipe::compressors::TransferStats* stats) override {
    return inner_->infer(x, stats);
  }
  std::string spec() const override { return "record(" + inner_->spec() + ")"; }

 private:
  std::shared_ptr<std::vector<Record>> log_;
  std::unique_ptr<slowpipe::compressors::Channel> inner_;
  ChannelRole role_;
  int index_, replica_;
};

}  // namespace

TEST_CASE("Engine: cutting the model is exact (GPT and CNN, 1/2/4 stages)") {
  SECTION("gpt") {
    auto data = slowpipe::test::text_data(16);
    const auto whole = slowpipe::test::run_steps(slowpipe::test::gpt_setup(*data, 1), *data, 20);
    for (int stages : {2, 4}) {
      INFO("stages " << stages);
      const auto split =
          slowpipe::test::run_steps(slowpipe::test::gpt_setup(*data, stages), *data, 20);
      require_close(split.losses, whole.losses, 1e-5);
    }
    CHECK(whole.losses.back() < whole.losses.front());  // it does learn
  }
  SECTION("cnn") {
    auto data = slowpipe::test::image_data(256);
    const auto whole = slowpipe::test::run_steps(slowpipe::test::cnn_setup(*data, 1), *data, 20);
    for (int stages : {2, 4}) {
      INFO("stages " << stages);
      const auto split =
          slowpipe::test::run_steps(slowpipe::test::cnn_setup(*data, stages), *data, 20);
      require_close(split.losses, whole.losses, 1e-5);
    }
  }
}

TEST_CASE("Engine: the same seed gives bitwise-identical losses") {
  auto data = slowpipe::test::text_data(16);
  const auto a = slowpipe::test::run_steps(slowpipe::test::gpt_setup(*data, 4), *data, 8);
  const auto b = slowpipe::test::run_steps(slowpipe::test::gpt_setup(*data, 4), *data, 8);
  REQUIRE(a.losses == b.losses);
  auto other = slowpipe::test::gpt_setup(*data, 4);
  other.seed = 8;
  CHECK(slowpipe::test::run_steps(other, *data, 8).losses != a.losses);
}

TEST_CASE("Engine: GPipe, 1F1B, micro-batches and replicas agree with the unsplit model") {
  auto data = slowpipe::test::text_data(16);
  const auto whole = slowpipe::test::run_steps(slowpipe::test::gpt_setup(*data, 1), *data, 20);
  for (const char* schedule : {"gpipe", "1f1b"}) {
    for (int M : {1, 4}) {
      for (int D : {1, 2}) {
        INFO(schedule << " M=" << M << " D=" << D);
        auto s = slowpipe::test::gpt_setup(*data, 4);
        s.pipeline.schedule = schedule;
        s.pipeline.microbatches = M;
        s.pipeline.replicas = D;
        require_close(slowpipe::test::run_steps(s, *data, 20).losses, whole.losses, 1e-5);
      }
    }
  }
}

TEST_CASE("Engine: interleaved 1F1B and ZB-H1 agree with GPipe and the unsplit model") {
  namespace nm = slowpipe::netmodel;
  auto data = slowpipe::test::text_data(16);
  const auto whole = slowpipe::test::run_steps(slowpipe::test::gpt_setup(*data, 1), *data, 12);
  for (int D : {1, 2}) {
    for (const char* codec : {"none", "q8"}) {
      INFO("D=" << D << " codec " << codec);
      // GPipe over 4 chunks on 4 stages is the reference for both: the same
      // cut, the same channels at the same boundaries.
      auto gpipe = slowpipe::test::gpt_setup(*data, 4);
      gpipe.pipeline.microbatches = 4;
      gpipe.pipeline.replicas = D;
      gpipe.compress.fw = gpipe.compress.bw = parsed(codec);
      const auto ref = slowpipe::test::run_steps(gpipe, *data, 12);
      if (std::string(codec) == "none") require_close(ref.losses, whole.losses, 1e-5);
      // Interleaved: 2 stages x 2 virtual stages = the same 4 chunks.
      auto inter = gpipe;
      inter.pipeline.stages = 2;
      inter.pipeline.virtual_stages = 2;
      inter.pipeline.schedule = "interleaved";
      require_close(slowpipe::test::run_steps(inter, *data, 12).losses, ref.losses, 1e-5);
      // ZB-H1: backward split into input and weight passes.
      auto zb = gpipe;
      zb.pipeline.schedule = "zb-h1";
      require_close(slowpipe::test::run_steps(zb, *data, 12).losses, ref.losses, 1e-5);
    }
  }
}

TEST_CASE("Engine: the trace of interleaved and ZB-H1 steps names chunks, devices and peers") {
  namespace nm = slowpipe::netmodel;
  auto data = slowpipe::test::text_data(16);
  const auto batch = data->get(slowpipe::models::Split::kTrain, {0, 1, 2, 3, 4, 5, 6, 7});
  auto inter = slowpipe::test::gpt_setup(*data, 2);
  inter.pipeline.virtual_stages = 2;
  inter.pipeline.schedule = "interleaved";
  inter.pipeline.microbatches = 2;
  PipelineEngine a(inter);
  REQUIRE(a.stages() == 4);
  const auto ra = a.train_step(batch, 0, 1);
  CHECK(ra.trace.stages == 2);
  CHECK(ra.trace.chunks == 4);
  int sends = 0;
  for (const auto& op : ra.trace.ops) {
    CHECK(op.device == op.chunk % 2);
    if (op.kind == nm::OpKind::kSendActivation) {
      ++sends;
      CHECK(op.peer == (op.chunk + 1) % 2);
    }
    if (op.kind == nm::OpKind::kSendGradient) {
      ++sends;
      CHECK(op.peer == (op.chunk - 1) % 2);
    }
  }
  CHECK(sends == 2 * 3 * 2);  // 3 boundaries, both directions, 2 micro-batches
  nm::NetConfig net;
  net.preset = "1Gbps";
  CHECK(nm::replay(ra.trace, net).step_s > 0);

  auto zb = slowpipe::test::gpt_setup(*data, 4);
  zb.pipeline.schedule = "zb-h1";
  zb.pipeline.microbatches = 4;
  PipelineEngine b(zb);
  const auto rb = b.train_step(batch, 0, 1);
  int inputs = 0, weights = 0;
  for (const auto& op : rb.trace.ops) {
    CHECK(op.kind != nm::OpKind::kBackward);
    if (op.kind == nm::OpKind::kBackwardInput) ++inputs;
    if (op.kind == nm::OpKind::kBackwardWeight) {
      ++weights;
      CHECK(op.compute_s >= 0);
    }
  }
  CHECK(inputs == 4 * 4);
  CHECK(weights == 4 * 4);
  CHECK(nm::replay(rb.trace, net).step_s > 0);
}

TEST_CASE("Engine: virtual stages need an interleaved schedule and two stages") {
  auto data = slowpipe::test::text_data(16);
  auto s = slowpipe::test::gpt_setup(*data, 2);
  s.pipeline.virtual_stages = 2;
  CHECK_THROWS_WITH(PipelineEngine(s), Catch::Contains("interleaved"));
  s = slowpipe::test::gpt_setup(*data, 1);
  s.pipeline.schedule = "interleaved";
  s.pipeline.virtual_stages = 2;
  CHECK_THROWS_WITH(PipelineEngine(s), Catch::Contains("pipeline.stages >= 2"));
}

TEST_CASE("Engine: channel updates follow the schedule's order") {
  auto data = slowpipe::test::text_data(16);
  const int S = 4, M = 4;
  for (const char* schedule : {"gpipe", "1f1b"}) {
    auto log = std::make_shared<std::vector<Record>>();
    auto setup = slowpipe::test::gpt_setup(*data, S);
    setup.pipeline.schedule = schedule;
    setup.pipeline.microbatches = M;
    setup.channel_factory = [log](ChannelRole role, int index, int replica) {
      return std::make_unique<RecordingChannel>(log, role, index, replica);
    };
    PipelineEngine engine(setup);
    const auto batch = data->get(slowpipe::models::Split::kTrain, {0, 1, 2, 3, 4, 5, 6, 7});
    engine.train_step(batch, 0, 1);
    // Expected: walk the executor's order; every F(s<S-1) sends forward on boundary s,
    // every B(s>0) sends backward on boundary s-1; micro-batch m starts at id 2m.
    std::vector<Record> expected;
    for (const auto& op : engine.order()) {
      const bool forward = op.pass == slowpipe::netmodel::Pass::kForward;
      if (forward && op.chunk < S - 1) {
        expected.push_back({ChannelRole::kForward, op.chunk, 0, 2 * op.microbatch});
      } else if (!forward && op.chunk > 0) {
        expected.push_back({ChannelRole::kBackward, op.chunk - 1, 0, 2 * op.microbatch});
      }
    }
    REQUIRE(log->size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO(schedule << " transfer " << i);
      CHECK((*log)[i].role == expected[i].role);
      CHECK((*log)[i].index == expected[i].index);
      CHECK((*log)[i].first_id == expected[i].first_id);
    }
    // Each boundary's backward channel sees micro-batches in the order stage s+1 runs B.
    const auto lists = slowpipe::netmodel::make_schedule(schedule, S, M);
    for (int b = 0; b + 1 < S; ++b) {
      std::vector<int64_t> seen, want;
      for (const auto& r : *log) {
        if (r.role == ChannelRole::kBackward && r.index == b) seen.push_back(r.first_id / 2);
      }
      for (const auto& op : lists.per_device[b + 1]) {
        if (op.pass != slowpipe::netmodel::Pass::kForward) want.push_back(op.microbatch);
      }
      CHECK(seen == want);
    }
  }
}

TEST_CASE("Engine: trace bookkeeping and identical replicas") {
  auto data = slowpipe::test::text_data(16);
  const int S = 4, M = 2, D = 2;
  auto setup = slowpipe::test::gpt_setup(*data, S);
  setup.pipeline.microbatches = M;
  setup.pipeline.replicas = D;
  const char* grad_spec = GENERATE("none", "q8", "ef(topk:0.1+q8)");
  const char* fw_spec = GENERATE("none", "aq(q2)");
  INFO("grad " << grad_spec << ", fw " << fw_spec);
  setup.compress.grad = slowpipe::compressors::GradientSpec::parse(grad_spec);
  setup.compress.fw = parsed(fw_spec);
  setup.compress.bw = parsed("q4");
  setup.compress.aq_warmup_epochs = 0;
  PipelineEngine engine(setup);
  slowpipe::models::EpochSampler sampler(data->size(slowpipe::models::Split::kTrain), 8, 3, true,
                                         true);
  for (int step = 0; step < 5; ++step) {
    const auto r = engine.train_step(
        data->get(slowpipe::models::Split::kTrain, sampler.next().indices), step, 5);
    int compute = 0;
    uint64_t trace_bytes = 0, channel_bytes = 0;
    for (const auto& op : r.trace.ops) {
      if (op.kind == slowpipe::netmodel::OpKind::kForward ||
          op.kind == slowpipe::netmodel::OpKind::kBackward) {
        ++compute;
        CHECK(op.compute_s > 0);
        CHECK(op.flops > 0);
      }
      trace_bytes += op.bytes;
    }
    CHECK(compute == 2 * D * S * M);
    for (const auto& c : r.fw) channel_bytes += c.bytes;
    for (const auto& c : r.bw) channel_bytes += c.bytes;
    for (const auto& c : r.grad) channel_bytes += c.bytes;
    CHECK(trace_bytes == channel_bytes);
    CHECK(channel_bytes > 0);
    // Replicas hold identical parameters and optimizer state after every step.
    const auto p0 = engine.model(0).parameters();
    const auto p1 = engine.model(1).parameters();
    REQUIRE(p0.size() == p1.size());
    for (size_t i = 0; i < p0.size(); ++i) REQUIRE(at::equal(p0[i], p1[i]));
    const auto s0 = engine.optimizer_state(0);
    const auto s1 = engine.optimizer_state(1);
    REQUIRE(s0.size() == s1.size());
    REQUIRE(!s0.empty());
    for (size_t i = 0; i < s0.size(); ++i) REQUIRE(at::equal(s0[i], s1[i]));
  }
}

TEST_CASE("Engine: compute ops carry kernel counts from the model's structure") {
  namespace nm = slowpipe::netmodel;
  auto data = slowpipe::test::text_data(16);
  auto setup = slowpipe::test::gpt_setup(*data, 4);  // embedding | block | block | head
  PipelineEngine engine(setup);
  const auto& model = engine.model(0);
  REQUIRE(model.blocks.size() == 4);
  // The engine's rule (two per leaf module with parameters) and the timing
  // shapes' rule (models/facts/model_shape.h) count the same GPT alike.
  slowpipe::models::ModelShape shape;
  shape.layers = 2;
  shape.stages = 1;
  CHECK(slowpipe::sim::forward_kernels(model, 0, 4) == slowpipe::models::forward_kernels(shape, 0));
  CHECK(slowpipe::sim::forward_kernels(model, 1, 2) == 12);  // a transformer block
  const auto batch = data->get(slowpipe::models::Split::kTrain, {0, 1, 2, 3, 4, 5, 6, 7});
  const auto r = engine.train_step(batch, 0, 1);
  int compute = 0;
  for (const auto& op : r.trace.ops) {
    const int c = op.chunk;
    const int fwd =
        slowpipe::sim::forward_kernels(model, static_cast<size_t>(c), static_cast<size_t>(c) + 1);
    if (op.kind == nm::OpKind::kForward) CHECK(op.kernels == fwd);
    if (op.kind == nm::OpKind::kBackward) CHECK(op.kernels == 2 * fwd);
    if (op.kind == nm::OpKind::kOptimizer) {
      CHECK(op.kernels == static_cast<int>(model.blocks[c]->parameters().size()));
    }
    if (op.kind == nm::OpKind::kSendActivation || op.kind == nm::OpKind::kSendGradient) {
      CHECK(op.kernels == 0);
    } else {
      CHECK(op.kernels > 0);
      ++compute;
    }
  }
  CHECK(compute > 0);
}
