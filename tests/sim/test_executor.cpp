// The single-process executor's global order: device orders kept, inputs exist.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "pipeline/schedule.h"

namespace {

namespace nm = slowpipe::netmodel;
using slowpipe::netmodel::ScheduledOp;

// Checks the invariants a global order must hold for a schedule.
void check_valid(const nm::Schedule& s, const std::vector<ScheduledOp>& order) {
  const int C = s.chunks, M = s.microbatches;
  size_t total = 0;
  for (const auto& list : s.per_device) total += list.size();
  REQUIRE(order.size() == total);
  std::vector<size_t> next(s.devices, 0);
  std::vector<std::vector<int>> f(C, std::vector<int>(M, 0)), b = f, w = f;
  for (const auto& op : order) {
    const int d = s.device_of[op.chunk], c = op.chunk, m = op.microbatch;
    // Each device's own order is preserved.
    REQUIRE(s.per_device[d][next[d]] == op);
    ++next[d];
    switch (op.pass) {
      case nm::Pass::kForward:
        if (c > 0) REQUIRE(f[c - 1][m] == 1);
        f[c][m] = 1;
        break;
      case nm::Pass::kBackward:
      case nm::Pass::kBackwardInput:
        REQUIRE(f[c][m] == 1);
        if (c < C - 1) REQUIRE(b[c + 1][m] == 1);
        b[c][m] = 1;
        break;
      case nm::Pass::kBackwardWeight:
        REQUIRE(b[c][m] == 1);
        w[c][m] = 1;
        break;
    }
  }
}

}  // namespace

TEST_CASE("Executor: schedules become valid global orders") {
  for (const auto& entry : nm::schedule_registry()) {
    for (int S : {1, 2, 4}) {
      for (int M : {1, 3, 4, 8}) {
        for (int v : {1, 2}) {
          if (v > 1 && (!entry.virtual_stages || M % S != 0)) continue;
          const auto s = nm::make_schedule(entry.name, S, M, v);
          INFO(entry.name << " S=" << S << " M=" << M << " v=" << v);
          check_valid(s, nm::single_process_order(s));
        }
      }
    }
  }
}

TEST_CASE("Executor: a deadlocking or malformed schedule is refused") {
  // Stage 1 wants B(1,0) before F(1,0) has run: impossible.
  nm::Schedule bad = nm::empty_schedule({2, 1, 1}, false);
  bad.per_device = {{{nm::Pass::kForward, 0, 0}, {nm::Pass::kBackward, 0, 0}},
                    {{nm::Pass::kBackward, 1, 0}, {nm::Pass::kForward, 1, 0}}};
  CHECK_THROWS_AS(nm::single_process_order(bad), std::logic_error);
  nm::Schedule missing = nm::empty_schedule({1, 1, 1}, false);
  missing.per_device = {{{nm::Pass::kForward, 0, 0}}};
  CHECK_THROWS_AS(nm::single_process_order(missing), std::logic_error);
  // Stage 0 waits for B(1,0) before sending F(0,0): deadlock, every pass present.
  nm::Schedule cycle = nm::empty_schedule({2, 1, 1}, false);
  cycle.per_device = {{{nm::Pass::kBackward, 0, 0}, {nm::Pass::kForward, 0, 0}},
                      {{nm::Pass::kForward, 1, 0}, {nm::Pass::kBackward, 1, 0}}};
  CHECK_THROWS_AS(nm::single_process_order(cycle), std::logic_error);
}
