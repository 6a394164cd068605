// run.dtype = bf16 (autocast: models/torch/internal/autocast.h, tested in
// tests/models/test_autocast.cpp): the demo GPT trains
// under bf16 autocast with fp32 master weights, differs from fp32 by bf16's
// rounding and no more, splits across stages and resumes bit for bit, sends
// fp32 across its cuts, and leaves the thread's autocast state as it was.
#include <ATen/autocast_mode.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "engine_fixture.h"
#include "tests/sim/shape_channel.h"

using slowpipe::sim::PipelineEngine;

namespace {

using slowpipe::test::batches;

slowpipe::sim::EngineSetup bf16_setup(const slowpipe::models::Dataset& data, int stages) {
  auto s = slowpipe::test::gpt_setup(data, stages);
  s.dtype = "bf16";
  return s;
}

}  // namespace

TEST_CASE("bf16: trains with fp32 master weights, near fp32 but not equal to it") {
  auto data = slowpipe::test::text_data(16);
  const auto bs = batches(*data, 12, 8);
  PipelineEngine fp32(slowpipe::test::gpt_setup(*data, 2));
  PipelineEngine bf16(bf16_setup(*data, 2));
  std::vector<double> a, b;
  a.reserve(12);
  b.reserve(12);
  for (int i = 0; i < 12; ++i) {
    a.push_back(fp32.train_step(bs[i], i, 12).loss);
    b.push_back(bf16.train_step(bs[i], i, 12).loss);
  }
  CHECK(b.back() < b.front());  // it learns
  bool differs = false;
  for (int i = 0; i < 12; ++i) {
    INFO("step " << i);
    CHECK(std::isfinite(b[i]));
    CHECK(std::abs(a[i] - b[i]) < 0.05 * a[i]);  // bf16 rounding, not another model
    differs = differs || a[i] != b[i];
  }
  CHECK(differs);  // the matmuls did run in bf16
  for (const auto& p : bf16.model(0).parameters()) CHECK(p.scalar_type() == at::kFloat);
}

TEST_CASE("bf16: stage outputs cross the cut in fp32; the autocast state is restored") {
  auto data = slowpipe::test::text_data(16);
  const auto bs = batches(*data, 1, 8);
  REQUIRE_FALSE(at::autocast::is_cpu_enabled());
  PipelineEngine bf16(bf16_setup(*data, 4));
  const auto r = bf16.train_step(bs[0], 0, 1);
  CHECK_FALSE(at::autocast::is_cpu_enabled());
  // An fp32 activation of [8, 16, 32] is 16 KiB on a `none` channel.
  for (const auto& fw : r.fw) CHECK(fw.bytes == 8u * 16 * 32 * 4);
}

TEST_CASE("bf16: 4 stages equal 1 stage, and save_state/load_state resume bit for bit") {
  auto data = slowpipe::test::text_data(16);
  const auto bs = batches(*data, 6, 8);
  std::vector<double> one;
  one.reserve(6);
  {
    PipelineEngine whole(bf16_setup(*data, 1));
    for (int i = 0; i < 6; ++i) one.push_back(whole.train_step(bs[i], i, 6).loss);
  }
  PipelineEngine split(bf16_setup(*data, 4));
  for (int i = 0; i < 3; ++i) CHECK(std::abs(split.train_step(bs[i], i, 6).loss - one[i]) < 1e-3);
  PipelineEngine resumed(bf16_setup(*data, 4));
  slowpipe::test::resume_from(split, resumed);
  std::vector<double> rest_split, rest_resumed;
  rest_split.reserve(3);
  rest_resumed.reserve(3);
  for (int i = 3; i < 6; ++i) {
    rest_split.push_back(split.train_step(bs[i], i, 6).loss);
    rest_resumed.push_back(resumed.train_step(bs[i], i, 6).loss);
  }
  CHECK(rest_split == rest_resumed);
}
