// The engine with a subspace-constrained GPT (model.subspace = k): what crosses
// each cut is k coefficients per token each way, and the pipeline computes the
// unsplit constrained model's losses; resume is bit for bit.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <memory>
#include <sstream>
#include <vector>

#include "engine_fixture.h"
#include "models/torch/sampler.h"
#include "shape_channel.h"
#include "sim/engine.h"

using slowpipe::sim::ChannelRole;
using slowpipe::sim::PipelineEngine;
using slowpipe::test::batches;
using slowpipe::test::Sent;
using slowpipe::test::ShapeChannel;

namespace {

constexpr int kSubspace = 4;  // d_model 32 / 8

slowpipe::sim::EngineSetup subspace_setup(const slowpipe::models::Dataset& data, int stages) {
  auto s = slowpipe::test::gpt_setup(data, stages);  // 2 layers, d_model 32, seq_len 16
  s.model.subspace = kSubspace;
  s.pipeline.microbatches = 2;
  return s;
}

}  // namespace

TEST_CASE("Subspace pipeline: every cut carries k values per token, forward and backward") {
  auto data = slowpipe::test::text_data(16);
  const int S = 4;
  auto log = std::make_shared<std::vector<Sent>>();
  auto setup = subspace_setup(*data, S);
  setup.channel_factory = [log](ChannelRole role, int index, int /*replica*/) {
    return std::make_unique<ShapeChannel>(log, role, index);
  };
  PipelineEngine engine(setup);
  const auto r = engine.train_step(batches(*data, 1, 8)[0], 0, 1);
  // 3 boundaries x 2 micro-batches x (forward + backward).
  REQUIRE(log->size() == 12);
  const int64_t mb = 4, t = 16;
  for (const auto& s : *log) {
    CHECK(s.shape == std::vector<int64_t>{mb, t, kSubspace});
    CHECK(s.bytes == static_cast<uint64_t>(4 * mb * t * kSubspace));
  }
  for (int b = 0; b + 1 < S; ++b) {
    CHECK(r.fw[b].bytes == static_cast<uint64_t>(2 * 4 * mb * t * kSubspace));
    CHECK(r.bw[b].bytes == r.fw[b].bytes);
  }
  // Control: the unconstrained model sends d_model values per token.
  log->clear();
  auto plain = setup;
  plain.model.subspace = 0;
  PipelineEngine(plain).train_step(batches(*data, 1, 8)[0], 0, 1);
  REQUIRE_FALSE(log->empty());
  CHECK(log->front().shape == std::vector<int64_t>{mb, t, 32});
}

TEST_CASE("Subspace pipeline: losses equal the unsplit constrained model's within 1e-5") {
  auto data = slowpipe::test::text_data(16);
  const auto bs = batches(*data, 6, 8);
  std::vector<double> one;
  {
    PipelineEngine whole(subspace_setup(*data, 1));
    for (int i = 0; i < 6; ++i) one.push_back(whole.train_step(bs[i], i, 6).loss);
  }
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1"}) {
    auto setup = subspace_setup(*data, 4);
    setup.pipeline.schedule = schedule;
    PipelineEngine split(setup);
    for (int i = 0; i < 6; ++i) {
      INFO(schedule << " step " << i);
      CHECK(std::abs(split.train_step(bs[i], i, 6).loss - one[i]) < 1e-5);
    }
    // Evaluation through the cuts too.
    PipelineEngine fresh(setup), whole(subspace_setup(*data, 1));
    const double a = fresh.evaluate(bs[0], false).loss_sum;
    const double b = whole.evaluate(bs[0], false).loss_sum;
    CHECK(std::abs(a - b) < 1e-5 * std::abs(b));
  }
  // Training moved the loss: the steps compared are not all the initial one.
  CHECK(one.back() < one.front());
}

TEST_CASE("Subspace pipeline: save_state and load_state resume bit for bit") {
  auto data = slowpipe::test::text_data(16);
  const auto bs = batches(*data, 6, 8);
  const auto setup = subspace_setup(*data, 4);
  std::vector<double> expect;
  {
    PipelineEngine whole(setup);
    for (int i = 0; i < 6; ++i) expect.push_back(whole.train_step(bs[i], i, 6).loss);
  }
  PipelineEngine first(setup);
  for (int i = 0; i < 3; ++i) first.train_step(bs[i], i, 6);
  PipelineEngine second(setup);
  slowpipe::test::resume_from(first, second);
  for (int i = 3; i < 6; ++i) CHECK(second.train_step(bs[i], i, 6).loss == expect[i]);
}

TEST_CASE("ReparamSSN pipeline (protocol-gpt): k coordinates and the token ids cross, counted") {
  auto data = slowpipe::test::text_data(16);
  auto setup = slowpipe::test::gpt_setup(*data, 4);
  setup.model.name = "protocol-gpt";
  setup.model.layers = 3;  // embedding, 3 blocks, head: the last block stays with the head
  setup.model.heads = 4;
  setup.model.subspace = 5;
  setup.model.ffn = 241;
  setup.pipeline.microbatches = 2;
  setup.pipeline.schedule = "1f1b";
  auto log = std::make_shared<std::vector<Sent>>();
  auto recorded = setup;
  recorded.channel_factory = [log](ChannelRole role, int index, int /*replica*/) {
    return std::make_unique<ShapeChannel>(log, role, index);
  };
  const auto bs = batches(*data, 4, 8);
  const auto r = PipelineEngine(recorded).train_step(bs[0], 0, 1);
  REQUIRE(log->size() == 12);
  const int64_t mb = 4, t = 16;
  for (const auto& s : *log) CHECK(s.shape == std::vector<int64_t>{mb, t, 5});
  // Per message: 5 fp32 coordinates and a 2-byte id per token.
  const auto per_message = static_cast<uint64_t>(4 * mb * t * 5 + 2 * mb * t);
  for (int b = 0; b < 3; ++b) {
    CHECK(r.fw[b].bytes == 2 * per_message);
    CHECK(r.bw[b].bytes == 2 * per_message);
  }
  // The pipeline computes the unsplit model's losses.
  auto whole_setup = setup;
  whole_setup.pipeline.stages = 1;
  PipelineEngine whole(whole_setup), split(setup);
  for (int i = 0; i < 4; ++i) {
    const double a = whole.train_step(bs[i], i, 4).loss, b = split.train_step(bs[i], i, 4).loss;
    INFO("step " << i);
    CHECK(std::abs(a - b) < 1e-5 * std::abs(a));
  }
}
