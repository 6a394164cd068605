// Muon (sim/optimizers/muon.cpp, docs/optimizers.md) against a reference
// written here in plain double loops: the Newton-Schulz orthogonalisation and
// the whole update (momentum, Nesterov, scale, weight decay; the AdamW groups
// at their own rates), both variants, on random tall, wide, square,
// rank-deficient and all-zero gradients, to 1e-6 relative; the momentum
// exchange; bitwise resume; the roles the GPT models declare.
#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <sstream>

#include "common/errors.h"
#include "double_matrix.h"
#include "models/facts/data_config.h"
#include "models/facts/model_config.h"
#include "models/torch/data_registry.h"
#include "models/torch/model_registry.h"
#include "sim/optimizer.h"

namespace ss = slowpipe::sim;
using slowpipe::models::ParamRole;

namespace {

using slowpipe::test::axpby;
using slowpipe::test::frobenius;
using slowpipe::test::Mat;
using slowpipe::test::matmul;
using slowpipe::test::transpose;
using slowpipe::test::zeros;

Mat from_tensor(const at::Tensor& t) {
  const at::Tensor f = t.to(at::kFloat).contiguous();
  Mat m = zeros(f.size(0), f.numel() / f.size(0));
  const float* d = f.data_ptr<float>();
  for (size_t i = 0; i < m.v.size(); ++i) m.v[i] = d[i];
  return m;
}

// ||a - b||_F / ||b||_F; a must be exactly zero where b is.
double relative_error(const Mat& a, const Mat& b) {
  const double nb = frobenius(b), nd = frobenius(axpby(1, a, -1, b));
  return nb == 0 ? nd : nd / nb;
}

struct Iteration {
  double a, b, c;
  int steps;
};
// The coefficients as the sources print them (docs/optimizers.md).
Iteration iteration_of(const std::string& variant) {
  return variant == "canonical" ? Iteration{3.4445, -4.7750, 2.0315, 5}
                                : Iteration{2.0, -1.5, 0.5, 12};
}

// Newton-Schulz on the wide orientation, from G / (||G||_F + 1e-7).
Mat newton_schulz(const Mat& g, const Iteration& it) {
  const bool tall = g.rows > g.cols;
  Mat x = tall ? transpose(g) : g;
  x = axpby(1.0 / (frobenius(x) + 1e-7), x, 0, x);
  for (int s = 0; s < it.steps; ++s) {
    const Mat a = matmul(x, transpose(x));
    const Mat b = axpby(it.b, a, it.c, matmul(a, a));
    x = axpby(it.a, x, 1, matmul(b, x));
  }
  return tall ? transpose(x) : x;
}

// One Muon step of a hidden matrix p with gradient g and momentum m (updated).
Mat muon_reference(const Mat& p, const Mat& g, Mat& m, const slowpipe::config::OptimConfig& c,
                   double lr) {
  const double mu = c.muon_momentum;
  m = axpby(mu, m, 1 - mu, g);
  const Mat u = axpby(1 - mu, g, mu, m);
  const double scale = std::sqrt(std::max(1.0, static_cast<double>(g.rows) / g.cols));
  const Mat o = newton_schulz(u, iteration_of(c.muon_variant));
  return axpby(1 - lr * c.muon_weight_decay, p, -lr * scale, o);
}

// One AdamW step (step count t after it) at rate lr, eps 1e-10.
Mat adamw_reference(const Mat& p, const Mat& g, Mat& m, Mat& v, int t,
                    const slowpipe::config::OptimConfig& c, double lr) {
  Mat out = p;
  for (size_t i = 0; i < p.v.size(); ++i) {
    m.v[i] = c.beta1 * m.v[i] + (1 - c.beta1) * g.v[i];
    v.v[i] = c.beta2 * v.v[i] + (1 - c.beta2) * g.v[i] * g.v[i];
    const double mh = m.v[i] / (1 - std::pow(c.beta1, t));
    const double vh = v.v[i] / (1 - std::pow(c.beta2, t));
    out.v[i] = p.v[i] * (1 - lr * c.weight_decay) - lr * mh / (std::sqrt(vh) + 1e-10);
  }
  return out;
}

// A gradient of kind `kind` (0 tall, 1 wide, 2 square, 3 rank-deficient, 4 zero).
at::Tensor random_gradient(int kind, std::mt19937& rng) {
  std::uniform_int_distribution<int> small(1, 8), large(9, 24);
  int64_t r = 0, c = 0;
  switch (kind) {
    case 0:
      r = large(rng), c = small(rng);
      break;
    case 1:
      r = small(rng), c = large(rng);
      break;
    case 2:
      r = c = small(rng) + 4;
      break;
    default:
      r = small(rng) + 6, c = small(rng) + 6;
      break;
  }
  if (kind == 4) return torch::zeros({r, c});
  if (kind != 3) return torch::randn({r, c}) * 0.1;
  const int64_t rank = std::min<int64_t>(3, std::min(r, c) - 1);
  return torch::randn({r, rank}).mm(torch::randn({rank, c})) * 0.1;  // rank < min(r, c)
}

slowpipe::config::OptimConfig muon_config(const std::string& variant) {
  slowpipe::config::OptimConfig c;
  c.name = "muon";
  c.muon_variant = variant;
  c.lr = 0.03;
  c.beta1 = 0.8;
  c.beta2 = 0.95;
  c.weight_decay = 0.001;
  return c;
}

}  // namespace

TEST_CASE("Muon: the orthogonalisation equals a double reference on 100 random matrices") {
  for (const std::string variant : {"benchmark", "canonical"}) {
    INFO(variant);
    std::mt19937 rng(7);
    torch::manual_seed(7);
    // lr 1, no momentum, no weight decay, p = 0: the step leaves -scale x NS(g).
    slowpipe::config::OptimConfig c = muon_config(variant);
    c.lr = 1.0;
    c.muon_momentum = 0.0;
    c.muon_weight_decay = 0.0;
    for (int i = 0; i < 100; ++i) {
      INFO("matrix " << i << ", kind " << i % 5);
      const at::Tensor g = random_gradient(i % 5, rng);
      const at::Tensor p = torch::zeros_like(g).requires_grad_();
      ss::StageOptimizer opt(c, {p}, {ParamRole::kHiddenMatrix});
      p.mutable_grad() = g.clone();
      opt.step();
      const Mat gm = from_tensor(g);
      const double scale = std::sqrt(std::max(1.0, static_cast<double>(gm.rows) / gm.cols));
      const Mat expected = axpby(-scale, newton_schulz(gm, iteration_of(variant)), 0, gm);
      CHECK(relative_error(from_tensor(p.detach()), expected) <= 1e-6);
      // The control: the other variant's iteration is far from this result,
      // so a mix-up of coefficients or counts would fail.
      if (i % 5 != 4) {
        const std::string other = variant == "benchmark" ? "canonical" : "benchmark";
        const Mat wrong = axpby(-scale, newton_schulz(gm, iteration_of(other)), 0, gm);
        CHECK(relative_error(from_tensor(p.detach()), wrong) > 1e-3);
      }
    }
  }
}

TEST_CASE("Muon: two steps of a hidden matrix equal a double reference on 100 random matrices") {
  for (const std::string variant : {"benchmark", "canonical"}) {
    INFO(variant);
    std::mt19937 rng(11);
    torch::manual_seed(11);
    const slowpipe::config::OptimConfig c = muon_config(variant);
    for (int i = 0; i < 100; ++i) {
      INFO("matrix " << i << ", kind " << i % 5);
      const at::Tensor g1 = random_gradient(i % 5, rng);
      const at::Tensor g2 = i % 5 == 4 ? torch::zeros_like(g1) : torch::randn_like(g1) * 0.1;
      const at::Tensor p = torch::randn_like(g1).requires_grad_();
      ss::StageOptimizer opt(c, {p}, {ParamRole::kHiddenMatrix});
      const double lr2 = c.lr * 0.5;  // a scheduled rate on the second step
      for (int step = 0; step < 2; ++step) {
        // The reference starts from the stored float values.
        Mat m = step == 0 ? zeros(g1.size(0), g1.size(1)) : from_tensor(opt.state_tensors()[0]);
        const Mat before = from_tensor(p.detach());
        const at::Tensor g = step == 0 ? g1 : g2;
        const double lr = step == 0 ? c.lr : lr2;
        opt.set_lr(lr);
        p.mutable_grad() = g.clone();
        opt.step();
        const Mat expected = muon_reference(before, from_tensor(g), m, c, lr);
        CHECK(relative_error(from_tensor(p.detach()), expected) <= 1e-6);
        CHECK(relative_error(from_tensor(opt.state_tensors()[0]), m) <= 1e-6);
      }
    }
  }
}

TEST_CASE("Muon: the momentum warm-up ramps mu linearly, then holds it") {
  // optim.muon_momentum_warmup = 2 from 0.85 to 0.97: mu = 0.85, 0.91, 0.97, 0.97.
  slowpipe::config::OptimConfig c = muon_config("benchmark");
  c.muon_momentum = 0.97;
  c.muon_momentum_start = 0.85;
  c.muon_momentum_warmup = 2;
  torch::manual_seed(5);
  const at::Tensor p = torch::randn({6, 4}).requires_grad_();
  ss::StageOptimizer opt(c, {p}, {ParamRole::kHiddenMatrix});
  const double mus[] = {0.85, 0.91, 0.97, 0.97};
  for (int step = 0; step < 4; ++step) {
    INFO("step " << step);
    Mat m = step == 0 ? zeros(6, 4) : from_tensor(opt.state_tensors()[0]);
    const Mat before = from_tensor(p.detach());
    const at::Tensor g = torch::randn({6, 4});
    p.mutable_grad() = g.clone();
    opt.step();
    slowpipe::config::OptimConfig fixed = c;
    fixed.muon_momentum = mus[step];
    fixed.muon_momentum_warmup = 0;
    const Mat expected = muon_reference(before, from_tensor(g), m, fixed, c.lr);
    CHECK(relative_error(from_tensor(p.detach()), expected) <= 1e-6);
    CHECK(relative_error(from_tensor(opt.state_tensors()[0]), m) <= 1e-6);
    // Control: a constant 0.97 would leave the first moment at 0.03 g, not 0.15 g.
    if (step == 0) {
      const Mat constant = axpby(0.0, zeros(6, 4), 1 - 0.97, from_tensor(g));
      CHECK(relative_error(from_tensor(opt.state_tensors()[0]), constant) > 0.5);
    }
  }
}

TEST_CASE("Muon: the AdamW groups step at their own rates, scaled by the schedule") {
  const slowpipe::config::OptimConfig c = muon_config("benchmark");
  torch::manual_seed(3);
  const std::vector<ParamRole> roles = {ParamRole::kEmbedding, ParamRole::kHead, ParamRole::kOther};
  const std::vector<double> peaks = {c.muon_embed_lr, c.muon_head_lr, c.muon_scalar_lr};
  std::vector<at::Tensor> params = {torch::randn({16, 4}).requires_grad_(),
                                    torch::randn({6, 4}).requires_grad_(),
                                    torch::randn({4}).requires_grad_()};
  ss::StageOptimizer opt(c, params, roles);
  std::vector<Mat> m, v, p;
  for (const auto& x : params) {
    p.push_back(from_tensor(x.detach().reshape({x.size(0), -1})));
    m.push_back(zeros(p.back().rows, p.back().cols));
    v.push_back(m.back());
  }
  for (int step = 1; step <= 3; ++step) {
    const double factor = step == 1 ? 1.0 : 0.25;  // scheduled lr / optim.lr
    opt.set_lr(c.lr * factor);
    for (size_t i = 0; i < params.size(); ++i) {
      const at::Tensor g = torch::randn_like(params[i]);
      params[i].mutable_grad() = g;
      p[i] = adamw_reference(p[i], from_tensor(g.reshape({g.size(0), -1})), m[i], v[i], step, c,
                             peaks[i] * factor);
    }
    opt.step();
    for (size_t i = 0; i < params.size(); ++i) {
      INFO("step " << step << ", parameter " << i);
      CHECK(relative_error(from_tensor(params[i].detach().reshape({params[i].size(0), -1})),
                           p[i]) <= 1e-6);
    }
  }
}

TEST_CASE("Muon: replicas exchanging momenta stay identical and follow the mean gradient") {
  for (const std::string variant : {"benchmark", "canonical"}) {
    INFO(variant);
    const slowpipe::config::OptimConfig c = muon_config(variant);
    torch::manual_seed(5);
    const at::Tensor p0 = torch::randn({24, 6}), b0 = torch::randn({6});
    auto make = [&](std::vector<at::Tensor>& ps) {
      ps = {p0.clone().requires_grad_(), b0.clone().requires_grad_()};
      return ss::StageOptimizer(c, ps, {ParamRole::kHiddenMatrix, ParamRole::kOther});
    };
    std::vector<at::Tensor> pa, pb, pm;
    ss::StageOptimizer a = make(pa), b = make(pb), mean_opt = make(pm);
    for (int step = 0; step < 3; ++step) {
      const at::Tensor ga = torch::randn({24, 6}), gb = torch::randn({24, 6});
      const at::Tensor ha = torch::randn({6}), hb = torch::randn({6});
      pa[0].mutable_grad() = ga, pa[1].mutable_grad() = ha;
      pb[0].mutable_grad() = gb, pb[1].mutable_grad() = hb;
      pm[0].mutable_grad() = (ga + gb) / 2, pm[1].mutable_grad() = (ha + hb) / 2;
      mean_opt.step();
      if (!a.has_moments()) {  // the first step is a plain one (as the engine's)
        pa[0].mutable_grad() = pm[0].grad().clone(), pa[1].mutable_grad() = pm[1].grad().clone();
        pb[0].mutable_grad() = pm[0].grad().clone(), pb[1].mutable_grad() = pm[1].grad().clone();
        a.step();
        b.step();
        continue;
      }
      const at::Tensor mean = (a.next_momentum() + b.next_momentum()) / 2;
      a.step_with_momentum(mean);
      b.step_with_momentum(mean);
    }
    for (size_t i = 0; i < pa.size(); ++i) CHECK(pa[i].equal(pb[i]));
    // The hidden matrix moves as one optimizer's on the mean gradient, to
    // float rounding (amplified by the iteration; a well-conditioned matrix).
    // The bias does not: its AdamW second moment is frozen (grad-sync.md).
    const at::Tensor d = (pa[0] - pm[0]).detach();
    CHECK(d.norm().item<double>() <= 1e-5 * pm[0].norm().item<double>());
    CHECK_FALSE(pa[1].equal(pm[1]));
  }
}

TEST_CASE("Muon: its state resumes bitwise; an archive of other shapes is refused") {
  const slowpipe::config::OptimConfig c = muon_config("canonical");
  torch::manual_seed(9);
  const std::vector<ParamRole> roles = {ParamRole::kHiddenMatrix, ParamRole::kOther};
  std::vector<at::Tensor> pa = {torch::randn({8, 5}).requires_grad_(),
                                torch::randn({5}).requires_grad_()};
  ss::StageOptimizer a(c, pa, roles);
  auto set_grads = [](const std::vector<at::Tensor>& ps, int step) {
    for (const auto& p : ps) p.mutable_grad() = torch::full_like(p, 0.01 * step) - p.detach();
  };
  set_grads(pa, 0);
  a.step();
  a.set_lr(0.011);
  torch::serialize::OutputArchive out;
  a.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  std::vector<at::Tensor> pb;
  pb.reserve(pa.size());
  for (const auto& p : pa) pb.push_back(p.detach().clone().requires_grad_());
  ss::StageOptimizer b(c, pb, roles);
  std::istringstream in_bytes(bytes.str());
  torch::serialize::InputArchive in;
  in.load_from(in_bytes);
  b.load(in);
  for (int step = 1; step < 4; ++step) {
    set_grads(pa, step);
    set_grads(pb, step);
    a.step();  // at the saved rate 0.011: b must have loaded it
    b.step();
  }
  for (size_t i = 0; i < pa.size(); ++i) CHECK(pa[i].equal(pb[i]));
  SECTION("an archive of other shapes") {
    std::vector<at::Tensor> other = {torch::randn({5, 8}).requires_grad_(),
                                     torch::randn({5}).requires_grad_()};
    ss::StageOptimizer d(c, other, roles);
    std::istringstream again(bytes.str());
    torch::serialize::InputArchive in2;
    in2.load_from(again);
    CHECK_THROWS_AS(d.load(in2), slowpipe::DataError);
  }
}

TEST_CASE("Muon parameter groups: the GPT models declare their hidden matrices") {
  for (const std::string name : {"gpt", "protocol-gpt"}) {
    INFO(name);
    slowpipe::models::ModelConfig mc;
    mc.name = name;
    mc.layers = 2;
    mc.d_model = 16;
    mc.heads = 2;
    mc.seq_len = 8;
    slowpipe::models::DatasetInfo info;
    info.task = slowpipe::models::Task::kLanguageModel;
    const auto model = slowpipe::models::build_model(mc, info, 1);
    for (const auto& block : model.blocks) {
      const auto roles = block->parameter_roles();
      const auto named = block->named_parameters();
      REQUIRE(roles.size() == named.size());
      for (size_t i = 0; i < roles.size(); ++i) {
        const std::string key = named[i].key();
        INFO(block->name() << " " << key);
        const bool weight2d = named[i].value().dim() == 2;
        const std::string kind = block->name();
        const ParamRole expected = !weight2d             ? ParamRole::kOther
                                   : kind == "Embedding" ? ParamRole::kEmbedding
                                   : kind == "LMHead"    ? ParamRole::kHead
                                                         : ParamRole::kHiddenMatrix;
        CHECK(roles[i] == expected);
      }
    }
  }
}
