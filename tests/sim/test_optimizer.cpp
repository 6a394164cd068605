// The optimizer and learning-rate-schedule registries: optim.name and
// optim.schedule take their choices from them, every listed optimizer has its
// implementation (stepping, state, momentum exchange, bitwise resume: a new
// optimizer is covered without a new test), and learning_rate follows each
// schedule's formula, written out here independently.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "common/errors.h"
#include "common/options.h"
#include "config/optim_registry.h"
#include "config/section_configs.h"
#include "sim/internal/optimizer_impl.h"
#include "sim/optimizer.h"

namespace ss = slowpipe::sim;

TEST_CASE("Optimizer registry: the option choices are the registry's names") {
  CHECK(slowpipe::config::optimizer_registry().names() ==
        std::vector<std::string>{"sgd", "adamw", "muon"});
  CHECK(slowpipe::config::lr_schedule_registry().names() ==
        std::vector<std::string>{"constant", "cosine", "linear", "stable-linear"});
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
  CHECK_THROWS_WITH(slowpipe::config::learning_rate(c, 10, total),
                    Catch::Contains("optim.schedule"));
}

TEST_CASE("learning_rate: stable-linear is Protocol NanoGPT's stable-then-decay schedule") {
  slowpipe::config::OptimConfig c;
  c.schedule = "stable-linear";
  c.lr = 0.025;
  c.min_lr_ratio = 0;
  c.warmup_steps = 0;
  const int64_t total = 3000;  // train_gpt.py: train_steps 3000, cooldown_frac 0.7
  for (int64_t step = 0; step < total; step += 7) {
    const double progress = static_cast<double>(step) / total;
    const double eta = progress < 1 - 0.7 ? 1.0 : (1 - progress) / 0.7;
    CHECK(slowpipe::config::learning_rate(c, step, total) == Approx(c.lr * eta).epsilon(1e-12));
  }
  // With a floor, a cooldown fraction of its own and a warm-up.
  c.min_lr_ratio = 0.1;
  c.cooldown_fraction = 0.5;
  c.warmup_steps = 4;
  const int64_t total2 = 24;  // 20 decay steps: flat for p < 0.5, then linear to 0.1
  for (int64_t step = 4; step < total2; ++step) {
    const double p = (step - 4) / 20.0;
    const double expected = p < 0.5 ? c.lr : c.lr * (0.1 + 0.9 * (1 - p) / 0.5);
    CHECK(slowpipe::config::learning_rate(c, step, total2) == Approx(expected).epsilon(1e-12));
  }
  CHECK(slowpipe::config::learning_rate(c, total2, total2) == Approx(c.lr * 0.1));
  CHECK(slowpipe::config::learning_rate(c, 1, total2) == Approx(c.lr * 2 / 4));
}

namespace {

// Two parameters (12 + 5 elements), drawn from `seed`.
std::vector<at::Tensor> two_params(uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({3, 4}).requires_grad_(), torch::randn({5}).requires_grad_()};
}

// Gradients that depend on the step and on the parameters.
void set_grads(const std::vector<at::Tensor>& params, int64_t step) {
  for (const auto& p : params) {
    p.mutable_grad() = torch::full_like(p, 0.01 * static_cast<double>(step + 1)) - p.detach();
  }
}

}  // namespace

TEST_CASE("Optimizers: every listed optimizer has its implementation; its state resumes bitwise") {
  std::vector<std::string> implemented;
  for (const auto& e : ss::optimizer_entries()) implemented.push_back(e.name);
  CHECK(implemented == slowpipe::config::optimizer_registry().names());
  CHECK_THROWS_WITH(ss::find_optimizer("lamb"), Catch::Contains("optim.name"));
  for (const auto& name : slowpipe::config::optimizer_registry().names()) {
    INFO(name);
    slowpipe::config::OptimConfig c;
    c.name = name;
    ss::StageOptimizer a(c, two_params(1));
    CHECK(a.state_tensors().empty());
    CHECK_FALSE(a.has_moments());
    set_grads(a.params(), 0);
    a.step();
    CHECK_FALSE(a.state_tensors().empty());
    CHECK(a.has_moments());
    const at::Tensor momentum = a.next_momentum();  // flat [1, N]
    CHECK(momentum.dim() == 2);
    CHECK(momentum.size(0) == 1);
    CHECK(momentum.size(1) == 17);
    CHECK(a.flops_per_step() > 0);
    torch::serialize::OutputArchive out;
    a.save(out);
    std::ostringstream bytes;
    out.save_to(bytes);
    // A fresh optimizer over equal parameters, loaded from the archive, steps
    // exactly as the original one does.
    std::vector<at::Tensor> copies;
    for (const auto& p : a.params()) copies.push_back(p.detach().clone().requires_grad_());
    ss::StageOptimizer b(c, copies);
    std::istringstream in_bytes(bytes.str());
    torch::serialize::InputArchive in;
    in.load_from(in_bytes);
    b.load(in);
    for (int64_t step = 1; step < 3; ++step) {
      set_grads(a.params(), step);
      set_grads(b.params(), step);
      a.step();
      b.step();
    }
    for (size_t i = 0; i < a.params().size(); ++i) CHECK(a.params()[i].equal(b.params()[i]));
  }
  SECTION("SGD without momentum keeps no first moment to exchange") {
    slowpipe::config::OptimConfig c;
    c.name = "sgd";
    c.momentum = 0;
    CHECK_THAT(ss::find_optimizer("sgd").no_moment(c), Catch::Contains("optim.momentum = 0"));
    c.momentum = 0.9;
    CHECK(ss::find_optimizer("sgd").no_moment(c).empty());
  }
}
