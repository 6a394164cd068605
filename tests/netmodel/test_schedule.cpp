// Schedules: every F and B exactly once per stage, F(m) before B(m), the
// 1F1B in-flight bound, and registry errors.
#include <algorithm>
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "netmodel/schedule.h"

namespace nm = slowpipe::netmodel;

namespace {
// Largest number of forwards not yet matched by their backward.
int max_in_flight(const std::vector<nm::ScheduledOp>& order) {
  int now = 0, peak = 0;
  for (const auto& op : order) {
    now += op.backward ? -1 : 1;
    peak = std::max(peak, now);
  }
  return peak;
}
}  // namespace

TEST_CASE("Schedules: complete, causal, and bounded in flight") {
  for (const auto& info : nm::schedules()) {
    for (int S : {1, 2, 4, 8}) {
      for (int M : {1, 3, 8, 32}) {
        const auto orders = nm::make_schedule(info.name, S, M);
        REQUIRE(orders.size() == static_cast<size_t>(S));
        for (int s = 0; s < S; ++s) {
          REQUIRE(orders[s].size() == static_cast<size_t>(2 * M));
          for (int m = 0; m < M; ++m) {
            auto f = std::find(orders[s].begin(), orders[s].end(), nm::ScheduledOp{false, s, m});
            auto b = std::find(orders[s].begin(), orders[s].end(), nm::ScheduledOp{true, s, m});
            REQUIRE(f != orders[s].end());
            REQUIRE(b != orders[s].end());
            REQUIRE(f < b);
          }
          if (info.name == "gpipe") CHECK(max_in_flight(orders[s]) == M);
          if (info.name == "1f1b") CHECK(max_in_flight(orders[s]) == std::min(S - s, M));
        }
      }
    }
  }
}

TEST_CASE("Schedules: unknown names and bad sizes are usage errors") {
  CHECK_THROWS_AS(nm::make_schedule("zigzag", 2, 2), slowpipe::UsageError);
  CHECK_THROWS_WITH(nm::make_schedule("zigzag", 2, 2), Catch::Contains("gpipe"));
  CHECK_THROWS_AS(nm::make_schedule("gpipe", 0, 2), slowpipe::UsageError);
}
