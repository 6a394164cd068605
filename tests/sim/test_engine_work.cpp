// The engine's per-chunk work (sim/engine_parts.h chunk_work): the GPT's
// blocks describe themselves kernel by kernel and add up to the FLOPs the
// trace carries; a block that does not (a subspace GPT's) stands by its FLOPs;
// the shaped clock times a training step from it.
// The fixture (libtorch, whose c10 logging defines a CHECK) before Catch.
#include <catch2/catch.hpp>

#include "engine_fixture.h"
#include "netmodel/compute_model.h"
#include "netmodel/replay.h"

using slowpipe::sim::PipelineEngine;
namespace nm = slowpipe::netmodel;

namespace {

double described_flops(const nm::OpWork& w) {
  double f = nm::gemm_flops(w) + w.other_flops;
  for (const auto& a : w.attention) f += nm::attention_flops(a, /*fused=*/false);
  return f;
}

slowpipe::models::Batch first_batch(const slowpipe::models::Dataset& data, int64_t size) {
  slowpipe::models::EpochSampler sampler(data.size(slowpipe::models::Split::kTrain), size, 7, true,
                                         true);
  return data.get(slowpipe::models::Split::kTrain, sampler.next().indices);
}

}  // namespace

TEST_CASE("Engine work: GPT blocks add up to the trace's FLOPs, kernel by kernel") {
  auto data = slowpipe::test::text_data(16);
  auto setup = slowpipe::test::gpt_setup(*data, 4);  // embedding | block | block | head
  setup.pipeline.microbatches = 2;
  PipelineEngine engine(setup);
  const auto r = engine.train_step(first_batch(*data, 8), 0, 1);
  REQUIRE(r.trace.chunk_work.size() == 4);
  const int64_t mb = 4, t = 16, d = 32;
  for (const auto& op : r.trace.ops) {
    if (op.kind != nm::OpKind::kForward) continue;
    const nm::OpWork& w = r.trace.chunk_work[static_cast<size_t>(op.chunk)];
    INFO("chunk " << op.chunk);
    CHECK(w.other_flops == 0);  // every block described itself
    // The embedding's FLOPs (T d per sample, its position add) are a pass here.
    const double embedding = op.chunk == 0 ? static_cast<double>(mb * t * d) : 0;
    CHECK(described_flops(w) + embedding == Approx(op.flops).epsilon(1e-12));
  }
  CHECK(r.trace.chunk_work[1].gemms.size() == 4);     // QKV, projection, MLP x 2
  CHECK(r.trace.chunk_work[1].gemms[0].m == mb * t);  // tokens of one micro-batch
  CHECK(r.trace.chunk_work[3].gemms[0].n == 256);     // the byte vocabulary
  CHECK(r.trace.chunk_work[1].attention[0].head_dim == d / 2);
}

TEST_CASE("Engine work: an undescribed block stands by its FLOPs; the shaped clock times a step") {
  auto data = slowpipe::test::text_data(16);
  auto setup = slowpipe::test::gpt_setup(*data, 2);
  setup.model.subspace = 8;  // subspace blocks do not describe themselves
  PipelineEngine engine(setup);
  const auto r = engine.train_step(first_batch(*data, 8), 0, 1);
  CHECK(r.trace.chunk_work[0].other_flops > 0);
  CHECK(r.trace.chunk_work[0].other_kernels > 0);
  CHECK(r.trace.chunk_work[1].gemms.size() == 1);  // the LM head alone
  nm::NetConfig net;
  net.compute = nm::parse_compute_spec("shaped:A100:dtype=bf16");
  const double shaped = nm::replay(r.trace, net).step_s;
  net.compute = nm::parse_compute_spec("shaped:A100:dtype=fp32");
  const double fp32 = nm::replay(r.trace, net).step_s;
  CHECK(shaped > 0);
  CHECK(fp32 >= shaped);                           // fp32's peak is the lower one
  CHECK(nm::replay(r.trace, net).step_s == fp32);  // deterministic
}
