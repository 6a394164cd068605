// The engine with learned bottlenecks (model.bottleneck; docs/models.md,
// "Learned bottlenecks"): a cut behind a bottleneck carries its width per
// token each way (plus the token ids with anchors), the other cuts the full
// width; 4 stages compute the 1-stage model's losses under gpipe, 1f1b and
// zb-h1; resume is bit for bit.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <memory>
#include <sstream>
#include <vector>

#include "engine_fixture.h"
#include "shape_channel.h"
#include "sim/engine.h"

using slowpipe::sim::ChannelRole;
using slowpipe::sim::PipelineEngine;
using slowpipe::test::batches;
using slowpipe::test::Sent;
using slowpipe::test::ShapeChannel;

namespace {

// 3 transformer blocks of d_model 32 in 4 stages: blocks 0-1, 2, 3, 4 (head),
// so the cuts sit after transformer blocks 1 and 2 and in front of the head.
slowpipe::sim::EngineSetup bottleneck_setup(const slowpipe::models::Dataset& data,
                                            const std::string& spec, int stages) {
  auto s = slowpipe::test::gpt_setup(data, stages);  // d_model 32, seq_len 16
  s.model.layers = 3;
  s.model.bottleneck = spec;
  s.pipeline.microbatches = 2;
  if (stages == 4) s.pipeline.cuts = "2,3,4";
  return s;
}

const char* const kSpecs[] = {"resbm:r=4", "learned:k=4:anchor=3"};

}  // namespace

TEST_CASE("Bottleneck pipeline: cuts behind a bottleneck carry its width, forward and backward") {
  auto data = slowpipe::test::text_data(16);
  for (const char* spec : kSpecs) {
    INFO(spec);
    auto log = std::make_shared<std::vector<Sent>>();
    auto setup = bottleneck_setup(*data, spec, 4);
    setup.channel_factory = [log](ChannelRole role, int index, int /*replica*/) {
      return std::make_unique<ShapeChannel>(log, role, index);
    };
    const auto r = PipelineEngine(setup).train_step(batches(*data, 1, 8)[0], 0, 1);
    REQUIRE(log->size() == 12);  // 3 boundaries x 2 micro-batches x 2 directions
    const int64_t mb = 4, t = 16;
    for (const auto& s : *log) {
      INFO("boundary " << s.boundary);
      const int64_t width = s.boundary < 2 ? 4 : 32;  // the last cut: no bottleneck
      CHECK(s.shape == std::vector<int64_t>{mb, t, width});
    }
    // Anchors add a 2-byte token id per token to each message behind them.
    const uint64_t ids = std::string(spec).find("anchor") != std::string::npos ? 2 * mb * t : 0;
    for (int b = 0; b < 2; ++b) {
      CHECK(r.fw[b].bytes == 2 * (4 * mb * t * 4 + ids));
      CHECK(r.bw[b].bytes == r.fw[b].bytes);
    }
    CHECK(r.fw[2].bytes == static_cast<uint64_t>(2 * 4 * mb * t * 32));
  }
}

TEST_CASE("Bottleneck pipeline: 4 stages compute the 1-stage model's losses") {
  auto data = slowpipe::test::text_data(16);
  const auto bs = batches(*data, 5, 8);
  for (const char* spec : kSpecs) {
    std::vector<double> one;
    one.reserve(5);
    PipelineEngine whole(bottleneck_setup(*data, spec, 1));
    for (int i = 0; i < 5; ++i) one.push_back(whole.train_step(bs[i], i, 5).loss);
    CHECK(one.back() < one.front());  // training moved: not every step is the first
    for (const char* schedule : {"gpipe", "1f1b", "zb-h1"}) {
      auto setup = bottleneck_setup(*data, spec, 4);
      setup.pipeline.schedule = schedule;
      PipelineEngine split(setup);
      for (int i = 0; i < 5; ++i) {
        INFO(spec << ", " << schedule << ", step " << i);
        CHECK(std::abs(split.train_step(bs[i], i, 5).loss - one[i]) < 1e-5);
      }
    }
  }
}

TEST_CASE("Bottleneck pipeline: save_state and load_state resume bit for bit") {
  auto data = slowpipe::test::text_data(16);
  const auto bs = batches(*data, 6, 8);
  for (const char* spec : kSpecs) {
    INFO(spec);
    const auto setup = bottleneck_setup(*data, spec, 4);
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
}
