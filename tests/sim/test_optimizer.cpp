// The optimizer and learning-rate-schedule registries: optim.name and
// optim.schedule take their choices from them, and learning_rate follows each
// schedule's formula, written out here independently.
#include <catch2/catch.hpp>
#include <cmath>

#include "common/errors.h"
#include "common/options.h"
#include "sim/optimizer.h"
#include "config/section_configs.h"

namespace ss = slowpipe::sim;

TEST_CASE("Optimizer registry: the option choices are the registry's names") {
  CHECK(slowpipe::config::optimizer_registry().names() == std::vector<std::string>{"sgd", "adamw"});
  CHECK(slowpipe::config::optimizer_registry().find("sgd")->kind == slowpipe::config::OptimizerKind::kSgd);
  CHECK(slowpipe::config::lr_schedule_registry().names() ==
        std::vector<std::string>{"constant", "cosine", "linear"});
  slowpipe::config::OptimConfig c;
  slowpipe::OptionSet opts;
  slowpipe::config::describe_options(c, opts);
  for (const auto& s : slowpipe::config::lr_schedule_registry()) {
    opts.set("optim.schedule", s.name);
    CHECK(c.schedule == s.name);
  }
  CHECK_THROWS_AS(opts.set("optim.schedule", "step"), slowpipe::UsageError);
  CHECK_THROWS_AS(opts.set("optim.name", "lamb"), slowpipe::UsageError);
}

TEST_CASE("learning_rate: warm-up, then each schedule's decay") {
  slowpipe::config::OptimConfig c;
  c.lr = 0.5;
  c.warmup_steps = 4;
  c.min_lr_ratio = 0.1;
  const int64_t total = 24;
  for (const char* schedule : {"constant", "cosine", "linear"}) {
    c.schedule = schedule;
    for (int64_t step = 0; step < total; ++step) {
      double expected;
      if (step < c.warmup_steps) {
        expected = c.lr * (step + 1) / c.warmup_steps;
      } else {
        const double p = (step - c.warmup_steps) / 20.0;
        const std::string s = schedule;
        expected = s == "constant" ? c.lr
                   : s == "linear" ? c.lr * (1 - 0.9 * p)
                                   : c.lr * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * p)));
      }
      CHECK(slowpipe::config::learning_rate(c, step, total) == Approx(expected).epsilon(1e-12));
    }
    CHECK(slowpipe::config::learning_rate(c, total, total) ==
          Approx(std::string(schedule) == "constant" ? c.lr : c.lr * c.min_lr_ratio));
  }
  c.schedule = "step";
  CHECK_THROWS_WITH(slowpipe::config::learning_rate(c, 10, total), Catch::Contains("optim.schedule"));
}
