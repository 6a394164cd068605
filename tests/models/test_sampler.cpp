// EpochSampler tests: permutations, determinism from the seed, epoch roll-over,
// drop_last, seek.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "common/errors.h"
#include "matchers.h"
#include "models/torch/sampler.h"

namespace sm = slowpipe::models;

TEST_CASE("EpochSampler: each epoch visits every sample once, in a seeded order") {
  sm::EpochSampler s(103, 10, /*seed=*/1);
  CHECK(s.batches_per_epoch() == 11);
  for (int64_t e = 0; e < 3; ++e) {
    std::vector<int64_t> seen;
    for (int64_t b = 0; b < 11; ++b) {
      CHECK(s.epoch() == e);
      auto batch = s.next();
      CHECK(batch.epoch == e);
      CHECK(batch.index_in_epoch == b);
      CHECK(batch.indices.size() == (b < 10 ? 10u : 3u));
      seen.insert(seen.end(), batch.indices.begin(), batch.indices.end());
    }
    CHECK(seen == s.order(e));
    std::sort(seen.begin(), seen.end());
    for (int64_t i = 0; i < 103; ++i) CHECK(seen[static_cast<size_t>(i)] == i);
  }
  CHECK(s.epoch() == 3);
}

TEST_CASE("EpochSampler: same seed same orders; epochs and seeds differ") {
  sm::EpochSampler a(1000, 32, 7), b(1000, 32, 7), c(1000, 32, 8);
  CHECK(a.order(0) == b.order(0));
  CHECK(a.order(5) == b.order(5));
  CHECK(a.order(0) != a.order(1));
  CHECK(a.order(0) != c.order(0));
  std::vector<int64_t> ident(1000);
  for (int i = 0; i < 1000; ++i) ident[static_cast<size_t>(i)] = i;
  CHECK(a.order(0) != ident);
  CHECK(sm::EpochSampler(1000, 32, 7, /*shuffle=*/false).order(3) == ident);
  for (int i = 0; i < 40; ++i) CHECK(a.next().indices == b.next().indices);
}

TEST_CASE("EpochSampler: drop_last and seek") {
  sm::EpochSampler s(25, 10, 3, true, /*drop_last=*/true);
  CHECK(s.batches_per_epoch() == 2);
  s.next();
  s.next();
  CHECK(s.epoch() == 1);

  sm::EpochSampler run(50, 8, 11), resumed(50, 8, 11);
  for (int i = 0; i < 9; ++i) run.next();  // epoch 1, batch 2 next
  resumed.seek(1, 2);
  for (int i = 0; i < 20; ++i) {
    auto x = run.next(), y = resumed.next();
    CHECK(x.indices == y.indices);
    CHECK(x.epoch == y.epoch);
  }
  CHECK_THROWS_AS(resumed.seek(0, 7), slowpipe::UsageError);
  CHECK_THROWS_AS(sm::EpochSampler(0, 8, 1), slowpipe::UsageError);
  CHECK_THROWS_AS(sm::EpochSampler(5, 0, 1), slowpipe::UsageError);
  CHECK_THROWS_AS(sm::EpochSampler(5, 8, 1, true, true), slowpipe::UsageError);
}
