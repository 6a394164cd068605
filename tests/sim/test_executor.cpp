// The single-process executor's global order: stage orders kept, inputs exist.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "netmodel/schedule.h"
#include "sim/executor.h"

namespace {

using slowpipe::sim::PipelineOp;

// Checks the invariants a global order must hold for S stages and M micro-batches.
void check_valid(const std::vector<std::vector<PipelineOp>>& per_stage,
                 const std::vector<PipelineOp>& order, int S, int M) {
  REQUIRE(order.size() == static_cast<size_t>(2 * S * M));
  std::vector<size_t> next(S, 0);
  std::vector<std::vector<int>> f(S, std::vector<int>(M, 0)), b(S, std::vector<int>(M, 0));
  for (const auto& op : order) {
    // Each stage's own order is preserved.
    REQUIRE(per_stage[op.stage][next[op.stage]] == op);
    ++next[op.stage];
    if (!op.backward) {
      if (op.stage > 0) REQUIRE(f[op.stage - 1][op.microbatch] == 1);
      f[op.stage][op.microbatch] = 1;
    } else {
      REQUIRE(f[op.stage][op.microbatch] == 1);
      if (op.stage < S - 1) REQUIRE(b[op.stage + 1][op.microbatch] == 1);
      b[op.stage][op.microbatch] = 1;
    }
  }
}

}  // namespace

TEST_CASE("Executor: schedules become valid global orders") {
  for (const char* name : {"gpipe", "1f1b"}) {
    for (int S : {1, 2, 4}) {
      for (int M : {1, 3, 8}) {
        const auto per_stage = slowpipe::netmodel::make_schedule(name, S, M);
        const auto order = slowpipe::sim::global_order(per_stage, M);
        INFO(name << " S=" << S << " M=" << M);
        check_valid(per_stage, order, S, M);
      }
    }
  }
}

TEST_CASE("Executor: a deadlocking or malformed schedule is refused") {
  // Stage 1 wants B(1,0) before F(1,0) has run: impossible.
  std::vector<std::vector<PipelineOp>> bad = {
      {{false, 0, 0}, {true, 0, 0}},
      {{true, 1, 0}, {false, 1, 0}},
  };
  CHECK_THROWS_AS(slowpipe::sim::global_order(bad, 1), std::logic_error);
  std::vector<std::vector<PipelineOp>> missing = {{{false, 0, 0}}};
  CHECK_THROWS_AS(slowpipe::sim::global_order(missing, 1), std::logic_error);
}
