// What the engine's step trace carries for the compute models: thread CPU
// seconds (the calibrated model's clock) and whether they are whole, the
// optimizer's memory bytes and FLOPs, and the raw size of every message
// (netmodel/trace.h; docs/netmodel.md, "Compute-time models").
#include <ATen/Parallel.h>

#include <catch2/catch.hpp>

#include "engine_fixture.h"
#include "sim/engine.h"
#include "tests/common/parsed_spec.h"

using slowpipe::netmodel::OpKind;
using slowpipe::sim::PipelineEngine;
using slowpipe::test::parsed;

namespace {

// Restores one compute thread when a test ends, whatever it set.
struct OneThreadAfter {
  ~OneThreadAfter() { slowpipe::sim::set_compute_threads(1); }
};

}  // namespace

TEST_CASE("Engine timing: thread CPU seconds, optimizer bytes, raw message bytes") {
  OneThreadAfter restore;
  slowpipe::sim::set_compute_threads(1);
  auto data = slowpipe::test::text_data(16);
  const int S = 2, M = 2;
  const char* optim = GENERATE("adamw", "sgd");
  INFO("optimizer " << optim);
  auto setup = slowpipe::test::gpt_setup(*data, S);
  setup.pipeline.microbatches = M;
  setup.optim.name = optim;
  setup.optim.momentum = 0.9;
  setup.compress.fw = parsed("q4");
  setup.compress.bw = parsed("q8");
  PipelineEngine engine(setup);
  slowpipe::models::EpochSampler sampler(data->size(slowpipe::models::Split::kTrain), 8, 3, true,
                                         true);
  const auto r =
      engine.train_step(data->get(slowpipe::models::Split::kTrain, sampler.next().indices), 0, 1);
  CHECK(r.trace.thread_cpu);  // one thread computes on the CPU
  const int64_t mb = setup.pipeline.batch_size / M;
  const double per_element = std::string(optim) == "adamw" ? 7 * 4 : 5 * 4;  // bytes
  const double flops_per_element = std::string(optim) == "adamw" ? 10 : 4;
  int optimizers = 0, sends = 0;
  for (const auto& op : r.trace.ops) {
    switch (op.kind) {
      case OpKind::kForward:
      case OpKind::kBackward:
      case OpKind::kBackwardInput:  // not in these schedules; timed like the others
      case OpKind::kBackwardWeight:
        CHECK(op.thread_cpu_s > 0);
        // One thread cannot spend more CPU time than the wall time it took
        // (plus the clocks' granularity).
        CHECK(op.thread_cpu_s <= op.compute_s + 1e-4);
        CHECK(op.memory_bytes == 0);
        break;
      case OpKind::kOptimizer: {
        ++optimizers;
        double params = 0;  // of the stage's blocks
        const auto& cuts = engine.cuts();
        for (size_t b = cuts[op.chunk]; b < cuts[op.chunk + 1]; ++b) {
          for (const auto& p : engine.model().blocks[b]->parameters()) {
            params += static_cast<double>(p.numel());
          }
        }
        CHECK(op.memory_bytes == per_element * params);
        CHECK(op.flops == flops_per_element * params);
        CHECK(op.thread_cpu_s > 0);
        break;
      }
      case OpKind::kSendActivation:
      case OpKind::kSendGradient:
        ++sends;
        CHECK(op.raw_bytes ==
              static_cast<uint64_t>(mb * setup.model.seq_len * setup.model.d_model * 4));
        CHECK(op.bytes < op.raw_bytes);  // q4 and q8 compress
        break;
      case OpKind::kAllReduce:
        break;
    }
  }
  CHECK(optimizers == S);
  CHECK(sends == 2 * (S - 1) * M);

  // With two threads the thread CPU clock misses the other thread's work.
  slowpipe::sim::set_compute_threads(2);
  CHECK(at::get_num_threads() == 2);
  const auto r2 =
      engine.train_step(data->get(slowpipe::models::Split::kTrain, sampler.next().indices), 1, 2);
  CHECK_FALSE(r2.trace.thread_cpu);
}
