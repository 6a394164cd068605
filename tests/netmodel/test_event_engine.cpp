// EventEngine: time order, deterministic tie-breaking, and a differential test
// against a naive reference (a list sorted by (time, insertion order)).
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "netmodel/internal/event_engine.h"

namespace nm = slowpipe::netmodel;

TEST_CASE("EventEngine: pops in time order, ties in insertion order") {
  nm::EventEngine e;
  e.schedule(2.0, 0, 1);
  e.schedule(1.0, 0, 2);
  e.schedule(2.0, 0, 3);
  e.schedule(1.0, 0, 4);
  std::vector<uint32_t> got;
  e.run([&](const nm::Event& ev) {
    got.push_back(ev.target);
    if (ev.target == 2) e.schedule(e.now(), 0, 5);  // same time, scheduled later: after 4
  });
  CHECK(got == std::vector<uint32_t>{2, 4, 5, 1, 3});
  CHECK(e.now() == 2.0);
  CHECK(e.processed() == 5);
}

TEST_CASE("EventEngine: matches a naive sorted-list reference on random workloads") {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> coarse(0, 50);  // coarse times: many ties
  for (int trial = 0; trial < 20; ++trial) {
    nm::EventEngine e;
    // Reference: (time, seq, id) kept in a vector; pop = min element.
    std::vector<std::tuple<double, uint64_t, uint32_t>> ref;
    uint64_t seq = 0;
    uint32_t next_id = 0;
    auto add = [&](double t) {
      e.schedule(t, 0, next_id);
      ref.emplace_back(t, seq++, next_id++);
    };
    for (int i = 0; i < 200; ++i) add(coarse(rng));
    std::vector<uint32_t> got, want;
    std::mt19937_64 rng2(trial);
    e.run([&](const nm::Event& ev) {
      got.push_back(ev.target);
      auto it = std::min_element(ref.begin(), ref.end());
      want.push_back(std::get<2>(*it));
      const double now = std::get<0>(*it);
      ref.erase(it);
      if (next_id < 600 && rng2() % 2 == 0) add(now + static_cast<double>(rng2() % 5));
    });
    REQUIRE(ref.empty());
    REQUIRE(got == want);
  }
}

TEST_CASE("EventEngine: never goes back in time, reset clears") {
  nm::EventEngine e;
  e.schedule(5.0, 0, 0);
  e.pop();
  e.schedule(1.0, 0, 1);  // in the past: clamped to now
  CHECK(e.pop().time_s == 5.0);
  e.schedule(9.0, 0, 2);
  e.reset();
  CHECK(e.empty());
  CHECK(e.now() == 0.0);
  CHECK_THROWS(e.pop());
}
