// Cut resolution tests: user cuts, every invalid form, and balancing against a
// brute-force enumeration of all contiguous partitions.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <functional>
#include <limits>
#include <random>

#include "common/errors.h"
#include "matchers.h"
#include "model_fixtures.h"
#include "models/torch/cuts.h"
#include "models/torch/model_registry.h"

namespace sm = slowpipe::models;
namespace st = slowpipe::models::testing;
using slowpipe::models::testing::WhatContains;

namespace {

// Naive reference: the smallest max-stage cost over every contiguous partition.
double brute_force_best(const std::vector<double>& costs, int stages) {
  const size_t n = costs.size();
  double best = std::numeric_limits<double>::infinity();
  std::vector<size_t> cuts = {0};
  std::function<void(size_t, int)> rec = [&](size_t start, int left) {
    if (left == 1) {
      double worst = 0, sum = 0;
      cuts.push_back(n);
      for (size_t s = 0; s + 1 < cuts.size(); ++s) {
        sum = 0;
        for (size_t i = cuts[s]; i < cuts[s + 1]; ++i) sum += costs[i];
        worst = std::max(worst, sum);
      }
      cuts.pop_back();
      best = std::min(best, worst);
      return;
    }
    for (size_t c = start + 1; c + static_cast<size_t>(left - 1) <= n; ++c) {
      cuts.push_back(c);
      rec(c, left - 1);
      cuts.pop_back();
    }
  };
  rec(0, stages);
  return best;
}

double max_stage(const std::vector<double>& costs, const std::vector<size_t>& cuts) {
  double worst = 0;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) {
    double sum = 0;
    for (size_t i = cuts[s]; i < cuts[s + 1]; ++i) sum += costs[i];
    worst = std::max(worst, sum);
  }
  return worst;
}

}  // namespace

TEST_CASE("resolve_cuts: user cuts win and are validated") {
  sm::Model m = sm::build_model(st::tiny_gpt(), st::text_info(16), 1);  // 4 blocks
  CHECK(sm::resolve_cuts(m, 1, {}, "params", nullptr) == std::vector<size_t>{0, 4});
  CHECK(sm::resolve_cuts(m, 2, {3}, "params", nullptr) == std::vector<size_t>{0, 3, 4});
  CHECK(sm::resolve_cuts(m, 4, {1, 2, 3}, "time", nullptr) == std::vector<size_t>{0, 1, 2, 3, 4});

  CHECK_THROWS_MATCHES(sm::resolve_cuts(m, 3, {2}, "params", nullptr), slowpipe::UsageError,
                       WhatContains("pipeline.cuts has 1 entries") && WhatContains("needs 2"));
  CHECK_THROWS_MATCHES(sm::resolve_cuts(m, 3, {2, 2}, "params", nullptr), slowpipe::UsageError,
                       WhatContains("strictly increasing"));
  CHECK_THROWS_MATCHES(sm::resolve_cuts(m, 3, {3, 1}, "params", nullptr), slowpipe::UsageError,
                       WhatContains("strictly increasing"));
  CHECK_THROWS_MATCHES(sm::resolve_cuts(m, 2, {0}, "params", nullptr), slowpipe::UsageError,
                       WhatContains("outside [1, 3]"));
  CHECK_THROWS_MATCHES(sm::resolve_cuts(m, 2, {4}, "params", nullptr), slowpipe::UsageError,
                       WhatContains("outside [1, 3]"));
  CHECK_THROWS_MATCHES(sm::resolve_cuts(m, 5, {}, "params", nullptr), slowpipe::UsageError,
                       WhatContains("exceeds the 4 blocks"));
  CHECK_THROWS_AS(sm::resolve_cuts(m, 0, {}, "params", nullptr), slowpipe::UsageError);
  CHECK_THROWS_MATCHES(sm::resolve_cuts(m, 2, {}, "flops", nullptr), slowpipe::UsageError,
                       WhatContains("pipeline.balance"));
  CHECK_THROWS_MATCHES(sm::resolve_cuts(m, 2, {}, "time", nullptr), slowpipe::UsageError,
                       WhatContains("probe"));
}

TEST_CASE("balance_cuts: optimal min-max partition (against brute force)") {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.0, 10.0);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 1 + rng() % 9;
    std::vector<double> costs(n);
    for (auto& c : costs) c = u(rng);
    const int stages = 1 + static_cast<int>(rng() % n);
    const auto cuts = sm::balance_cuts(costs, stages);
    REQUIRE(cuts.size() == static_cast<size_t>(stages) + 1);
    CHECK(cuts.front() == 0);
    CHECK(cuts.back() == n);
    for (size_t s = 0; s + 1 < cuts.size(); ++s) CHECK(cuts[s] < cuts[s + 1]);
    CHECK(max_stage(costs, cuts) == Approx(brute_force_best(costs, stages)));
  }
  // Equal costs split evenly.
  CHECK(sm::balance_cuts({1, 1, 1, 1, 1, 1}, 3) == std::vector<size_t>{0, 2, 4, 6});
}

TEST_CASE("resolve_cuts: balancing by parameters and by measured time") {
  auto cfg = st::tiny_gpt();
  cfg.layers = 4;
  sm::Model m = sm::build_model(cfg, st::text_info(16), 1);  // 6 blocks
  const auto costs = sm::block_parameter_costs(m);
  CHECK(costs[1] == static_cast<double>(m.parameter_count(1, 2)));
  const auto by_params = sm::resolve_cuts(m, 4, {}, "params", nullptr);
  CHECK(max_stage(costs, by_params) == Approx(brute_force_best(costs, 4)));

  const auto probe = st::random_batch(m.task, 2, 16, 3);
  m.blocks[2]->eval();  // training flags must survive the measurement
  auto head_weight = m.blocks[5]->parameters()[1];
  head_weight.mutable_grad() = torch::full_like(head_weight, 0.25);  // gradients too
  const auto times = sm::measure_block_times_s(m, probe, 1);
  REQUIRE(times.size() == 6);
  for (double t : times) CHECK(t > 0);
  CHECK(torch::equal(head_weight.grad(), torch::full_like(head_weight, 0.25)));
  head_weight.mutable_grad() = at::Tensor();
  for (auto& p : m.parameters()) CHECK_FALSE(p.grad().defined());  // gradients left alone
  CHECK_FALSE(m.blocks[2]->is_training());
  CHECK(m.blocks[1]->is_training());
  const auto by_time = sm::resolve_cuts(m, 3, {}, "time", &probe);
  REQUIRE(by_time.size() == 4);
  CHECK(by_time.front() == 0);
  CHECK(by_time.back() == 6);
  CHECK(by_time[1] < by_time[2]);
}
